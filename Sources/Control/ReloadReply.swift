import Core
/// `reload`: the outcome of re-reading the whole config file and applying the difference to the
/// running peers (issue 15, like `wg syncconf`). A config with errors is not a `ReloadReply`: the
/// daemon answers `ControlResponse.error` with code `invalidConfig` and the `file:line` messages,
/// and changes nothing.
public struct ReloadReply: Hashable, Sendable, Codable {
    /// Peers that appeared, by name, in config order.
    public var added: [String]
    /// Peers that are gone (their sessions ended with reason `removed`).
    public var removed: [String]
    /// Peers whose keys, AllowedIPs, tier, expiry or `Disabled` changed (applied in place).
    public var changed: [String]
    /// The config's warnings (`file:line: Key: …`), as `tunneld --check-config` prints them.
    public var warnings: [String]
    /// The policy generation in force after the reload.
    public var policyGeneration: UInt64

    /// A reload outcome.
    public init(added: [String] = [], removed: [String] = [], changed: [String] = [], warnings: [String] = [],
                policyGeneration: UInt64) {
        self.added = added
        self.removed = removed
        self.changed = changed
        self.warnings = warnings
        self.policyGeneration = policyGeneration
    }

    /// True when no peer was added, removed or changed.
    public var isUnchanged: Bool { added.isEmpty && removed.isEmpty && changed.isEmpty }
}
