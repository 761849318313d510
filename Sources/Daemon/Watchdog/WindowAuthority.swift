import Core
import Store

/// A window as the shared store answered: its dates, the bytes used in it over every
/// gateway, and whether this gateway's request opened it.
public struct SharedGrant: Sendable, Hashable {
    /// The window's dates.
    public var dates: WindowDates
    /// Bytes used in it over every gateway.
    public var used: ByteUse
    /// True when this gateway's request opened it.
    public var opened: Bool
    /// The gateway that opened it.
    public var gateway: String

    public init(dates: WindowDates, used: ByteUse, opened: Bool, gateway: String) {
        self.dates = dates
        self.used = used
        self.opened = opened
        self.gateway = gateway
    }

    init(_ w: SharedWindow, opened: Bool) {
        self.init(dates: w.dates, used: ByteUse(up: w.usedUp, down: w.usedDown), opened: opened, gateway: w.gateway)
    }
}

/// What the watchdog asks before a window opens (`Watchdog.setAuthority`).
public protocol WindowAuthority: Sendable {
    /// The window in force for `peer` after trying to open one with `dates` at `now` in the shared
    /// store: ours, or the one another gateway holds. Nil when the store did not answer (away,
    /// slow): the watchdog then opens the window alone, and it is reconciled later.
    func open(peer: String, dates: WindowDates, now: Int64) -> SharedGrant?
}
