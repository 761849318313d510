import Core
/// `reload`: the outcome of re-reading the whole config file and applying the difference to the
/// running peers (like `wg syncconf`). A config with errors is not a `ReloadReply`: the
/// daemon answers `ControlResponse.error` with code `invalidConfig` and the `file:line` messages,
/// and changes nothing.
public struct ReloadReply: Hashable, Sendable, Codable {
    /// Peers that appeared, by name, in config order.
    public var added: [String]
    /// Peers that are gone (their sessions ended with reason `removed`).
    public var removed: [String]
    /// Peers with any change in ``changes``, by name, in config order.
    public var changed: [String]
    /// Each change of a peer that stayed: disabled, enabled, `Expires`, tier, AllowedIPs, keys, …
    /// (a reply of an older tunneld has none: only ``changed``).
    public var changes: [PeerChange]
    /// The config's warnings (`file:line: Key: …`), as `tunneld --check-config` prints them.
    public var warnings: [String]
    /// The policy generation in force after the reload.
    public var policyGeneration: UInt64
    /// Why the policy files were refused (`file:line: …`), empty when the policy reloaded: the
    /// peers may have changed while the running policy (``policyGeneration``) was kept.
    public var policyErrors: [String]

    /// A reload outcome; `changed` defaults to the peers that `changes` names.
    public init(added: [String] = [], removed: [String] = [], changed: [String]? = nil, changes: [PeerChange] = [],
                warnings: [String] = [], policyGeneration: UInt64, policyErrors: [String] = []) {
        self.added = added
        self.removed = removed
        var names: [String] = []
        for c in changes where !names.contains(c.peer) { names.append(c.peer) }
        self.changed = changed ?? names
        self.changes = changes
        self.warnings = warnings
        self.policyGeneration = policyGeneration
        self.policyErrors = policyErrors
    }

    private enum CodingKeys: String, CodingKey { case added, removed, changed, changes, warnings, policyGeneration, policyErrors }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        added = try c.decode([String].self, forKey: .added)
        removed = try c.decode([String].self, forKey: .removed)
        changed = try c.decode([String].self, forKey: .changed)
        changes = try c.decodeIfPresent([PeerChange].self, forKey: .changes) ?? []
        warnings = try c.decode([String].self, forKey: .warnings)
        policyGeneration = try c.decode(UInt64.self, forKey: .policyGeneration)
        policyErrors = try c.decodeIfPresent([String].self, forKey: .policyErrors) ?? []
    }

    /// True when no peer was added, removed or changed.
    public var isUnchanged: Bool { added.isEmpty && removed.isEmpty && changed.isEmpty }

    /// Every peer change in words, the one text tunneld's log line and tunnelctl print:
    /// `added carol; removed dave; bob disabled; alice tier free -> trial`, or `no peer changed`.
    public var peerText: String {
        var parts: [String] = []
        if !added.isEmpty { parts.append("added " + added.joined(separator: ", ")) }
        if !removed.isEmpty { parts.append("removed " + removed.joined(separator: ", ")) }
        parts += changes.map(\.text)
        // An older tunneld names changed peers only.
        let told = Set(changes.map(\.peer))
        let untold = changed.filter { !told.contains($0) }
        if !untold.isEmpty { parts.append("changed " + untold.joined(separator: ", ")) }
        return parts.isEmpty ? "no peer changed" : parts.joined(separator: "; ")
    }
}
