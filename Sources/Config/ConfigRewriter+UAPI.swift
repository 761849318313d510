import ControlProtocol
import Core
import Packet

/// What a UAPI `set=1` (`wg set`, `wg setconf`, `wg addconf`) does to `tunneld.conf`:
/// tunneld writes peers added over the UAPI back to the file, so none is silently ephemeral.
public struct UAPIWriteBack: Hashable, Sendable {
    /// The new text of the file (equal to the old one when the request changes no peer's record).
    public var text: String
    /// Names of the peers appended (`peer-` and a key prefix).
    public var added: [String] = []
    /// Names of the peers whose `[Peer]` section went.
    public var removed: [String] = []
    /// Names of the peers whose `AllowedIPs`, `PresharedKey` or `PersistentKeepalive` line changed.
    public var changed: [String] = []

    /// Whether the file changes.
    public var changesFile: Bool { !(added.isEmpty && removed.isEmpty && changed.isEmpty) }
}

extension ConfigRewriter {
    /// `text` (which parses as `config`) with the peer changes of `request` written in, in the
    /// protocol's meaning (https://www.wireguard.com/xplatform/):
    /// - a new peer gets a `[Peer]` section under a comment with `nowMs`: `Name = peer-XXXXXXXX`
    ///   (``PeerName/fromKey(_:length:)``, longer when the file has that name), `PublicKey`,
    ///   `PresharedKey`, `AllowedIPs`, `Endpoint`, `PersistentKeepalive` as given, and
    ///   `Tier = ` the interface's `DefaultTier`;
    /// - `remove=true` removes the peer's section (like `tunnelctl peer remove`);
    /// - `allowed_ip` / `replace_allowed_ips`, `preshared_key` and `persistent_keepalive_interval`
    ///   rewrite those lines of an existing peer; a prefix taken by one peer leaves every other
    ///   peer's `AllowedIPs`, as in WireGuard's trie;
    /// - `replace_peers=true` (`wg setconf`) removes every section the request does not name and
    ///   gives the ones it names exactly the AllowedIPs and preshared key it lists;
    /// - endpoints of existing peers are runtime state (they roam) and are not written.
    /// Throws for what the daemon refuses anyway (an endpoint that is a host name).
    public static func applyUAPI(_ request: UAPISetRequest, to text: String, config: TunnelConfig,
                                 nowMs: Int64) throws(ValueError) -> UAPIWriteBack {
        struct Record {
            var name: String
            var key: WireGuardKey
            var inFile: Bool
            var allowedIPs: [IPPrefix]
            var presharedKey: WireGuardKey?
            var keepalive: UInt16?
            var endpoint: HostPort?
            var touched = false
            var removed = false
        }
        var records: [Record] = config.peers.map {
            Record(name: $0.name, key: $0.publicKey, inFile: true, allowedIPs: $0.allowedIPs,
                   presharedKey: $0.presharedKey, keepalive: $0.persistentKeepalive)
        }
        let original = records
        var named = Set<WireGuardKey>()
        // Which record holds each prefix (one owner, as in WireGuard's trie): a set with 100,000
        // allowed_ip lines stays linear.
        var owner: [IPPrefix: Int] = [:]
        for (i, r) in records.enumerated() { for p in r.allowedIPs { owner[p] = i } }
        func clearAllowedIPs(_ i: Int) {
            for p in records[i].allowedIPs where owner[p] == i { owner[p] = nil }
            records[i].allowedIPs = []
        }
        func index(_ key: WireGuardKey) -> Int? { records.firstIndex { $0.key == key && !$0.removed } }
        func uniqueName(_ key: WireGuardKey) -> String {
            let text = key.base64
            var length = 8
            while true {
                let name = PeerName.fromKey(text, length: length)
                if length >= text.count || !records.contains(where: { !$0.removed && $0.name == name }) { return name }
                length += 4
            }
        }
        for update in request.peers {
            if update.endpoint != nil && update.endpoint?.address == nil {
                throw ValueError("peer \(update.publicKey.base64): endpoint must be an address, not a host name")
            }
            named.insert(update.publicKey)
            if update.remove {
                if let i = index(update.publicKey) {
                    clearAllowedIPs(i)
                    records[i].removed = true
                }
                continue
            }
            var i = index(update.publicKey)
            if i == nil {
                if update.updateOnly { continue }
                records.append(Record(name: uniqueName(update.publicKey), key: update.publicKey, inFile: false,
                                      allowedIPs: [], presharedKey: nil, keepalive: nil))
                i = records.count - 1
            } else if request.replacePeers && !records[i!].touched {
                // replace_peers: this peer starts afresh, as if it had been removed and added.
                clearAllowedIPs(i!)
                records[i!].presharedKey = nil
            }
            let at = i!
            records[at].touched = true
            if let psk = update.presharedKey { records[at].presharedKey = psk.isZero ? nil : psk }
            if let k = update.persistentKeepaliveInterval { records[at].keepalive = k == 0 ? nil : k }
            if !records[at].inFile, let e = update.endpoint { records[at].endpoint = e }
            if update.replaceAllowedIPs { clearAllowedIPs(at) }
            for p in update.allowedIPs where owner[p] != at {
                if let other = owner[p] { records[other].allowedIPs.removeAll { $0 == p } }
                records[at].allowedIPs.append(p)
                owner[p] = at
            }
        }
        if request.replacePeers {
            for i in records.indices where !named.contains(records[i].key) && !records[i].removed {
                clearAllowedIPs(i)
                records[i].removed = true
            }
        }

        var out = UAPIWriteBack(text: text)
        for (i, r) in records.enumerated() where r.inFile {
            if r.removed {
                out.text = try removePeer(out.text, named: r.name)
                out.removed.append(r.name)
                continue
            }
            let before = original[i]
            var changed = false
            if before.allowedIPs != r.allowedIPs {
                out.text = try replaceAll(out.text, peer: r.name, key: "AllowedIPs",
                                          value: r.allowedIPs.isEmpty ? nil : r.allowedIPs.map(\.description).joined(separator: ", "))
                changed = true
            }
            if before.presharedKey != r.presharedKey {
                out.text = try setKey(out.text, peer: r.name, key: "PresharedKey", value: r.presharedKey?.base64)
                changed = true
            }
            if before.keepalive != r.keepalive {
                out.text = try setKey(out.text, peer: r.name, key: "PersistentKeepalive", value: r.keepalive.map(String.init))
                changed = true
            }
            if changed { out.changed.append(r.name) }
        }
        for r in records where !r.inFile && !r.removed {
            var entries: [(key: String, value: String)] = [("Name", r.name), ("PublicKey", r.key.base64)]
            if let psk = r.presharedKey { entries.append(("PresharedKey", psk.base64)) }
            if !r.allowedIPs.isEmpty { entries.append(("AllowedIPs", r.allowedIPs.map(\.description).joined(separator: ", "))) }
            if let e = r.endpoint { entries.append(("Endpoint", e.description)) }
            if let k = r.keepalive { entries.append(("PersistentKeepalive", String(k))) }
            entries.append(("Tier", config.interface.defaultTier.rawValue))
            out.text = appendPeer(out.text, entries: entries, comment: ["added over the UAPI (wg set), \(TimeText.iso(nowMs))"])
            out.added.append(r.name)
        }
        return out
    }

    /// `text` with every `key` line of the peer's section replaced by one (`value`), or all
    /// removed (`value` nil). For keys that may repeat (`AllowedIPs`).
    static func replaceAll(_ text: String, peer name: String, key: String, value: String?) throws(ValueError) -> String {
        var text = text
        let lower = key.lowercased()
        while try find(name, lines(text)).keys.filter({ $0.key == lower }).count > (value == nil ? 0 : 1) {
            text = try setKey(text, peer: name, key: key, value: nil)
        }
        guard let value else { return text }
        return try setKey(text, peer: name, key: key, value: value)
    }
}
