import Core

/// One change a reload made to one peer (`tunnelctl reload`, SIGHUP, every `tunnelctl peer` edit,
/// a `wg set` written back): what the reply and tunneld's log line name, so "no peer changed" is
/// never said of a reload that disabled someone.
public struct PeerChange: Hashable, Sendable, Codable {
    /// What changed.
    public enum Kind: String, Hashable, Sendable, Codable, CaseIterable {
        /// `Disabled = true` appeared: refused from now on (reason `disabled`).
        case disabled
        /// `Disabled` went: admitted again.
        case enabled
        /// `Expires` was set, moved or removed.
        case expires
        /// The configured `Tier` (an override from `tunnelctl peer tier` still wins over it).
        case tier
        /// `AllowedIPs`.
        case allowedIPs = "allowed-ips"
        /// The public key of a peer of the same name: a new peer in its place (its session ended).
        case publicKey = "public-key"
        /// `PresharedKey` was set, changed or removed (keys are never shown).
        case presharedKey = "preshared-key"
        /// `Name` (the peer is the same key).
        case name
        /// `PersistentKeepalive`.
        case keepalive
        /// `Endpoint`.
        case endpoint
        /// A per-peer limit key (`Rate`, `Quota`, `Session`, …).
        case limits
    }

    /// The peer's name (its new name for ``Kind/name``).
    public var peer: String
    public var kind: Kind
    /// The value before and after, as the config file writes it (nil where there is no value to
    /// show: `disabled`, `enabled`, keys, limits).
    public var from: String?
    public var to: String?
    /// What the change does not do, when that differs from what it says: a configured tier
    /// changed under a runtime override (`override free stays in force`).
    public var note: String?

    public init(peer: String, kind: Kind, from: String? = nil, to: String? = nil, note: String? = nil) {
        self.peer = peer
        self.kind = kind
        self.from = from
        self.to = to
        self.note = note
    }

    /// `bob disabled`, `alice tier free -> trial`, `carol AllowedIPs 10.99.0.4/32 -> 10.99.0.4/32, 10.99.0.9/32`.
    public var text: String {
        body + (note.map { " (\($0))" } ?? "")
    }

    private var body: String {
        let change = { (what: String) in "\(peer) \(what) \(from ?? "none") -> \(to ?? "none")" }
        switch kind {
        case .disabled: return "\(peer) disabled"
        case .enabled: return "\(peer) enabled"
        case .expires: return "\(peer) Expires \(from ?? "never") -> \(to ?? "never")"
        case .tier: return change("configured tier")
        case .allowedIPs: return change("AllowedIPs")
        case .publicKey: return "\(peer) public key changed (a new peer in its place)"
        case .presharedKey: return "\(peer) preshared key " + (from == nil ? "set" : to == nil ? "removed" : "changed")
        case .name: return "\(from ?? "?") renamed \(peer)"
        case .keepalive: return change("PersistentKeepalive")
        case .endpoint: return change("Endpoint")
        case .limits: return "\(peer) limits changed"
        }
    }
}
