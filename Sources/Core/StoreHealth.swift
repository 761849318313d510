/// How the daemon's store writer is doing, as `tunnelctl status` shows it.
public struct StoreHealth: Hashable, Sendable, Codable {
    /// Records lost for good since the daemon started, per family.
    public var drops: StoreDrops
    /// Start of the current outage (epoch ms): the first failed write not yet followed by a
    /// successful one. nil while the store is writable.
    public var unavailableSinceMs: Int64?
    /// Records waiting for the store to come back (taken from the queue, not yet written).
    public var retained: Int
    /// The error of the current outage (nil while the store is writable).
    public var error: String?

    /// A health report.
    public init(drops: StoreDrops = StoreDrops(), unavailableSinceMs: Int64? = nil, retained: Int = 0, error: String? = nil) {
        self.drops = drops
        self.unavailableSinceMs = unavailableSinceMs
        self.retained = retained
        self.error = error
    }
}
