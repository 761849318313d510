import Core
/// The store protocol (docs/scale-out.md, "One store protocol"): free-tier windows with
/// their byte use, runtime tier overrides, `Disabled` / `Expires`, the settings every gateway
/// prunes with, and history (read back, shipped from a gateway's journal, pruned).
///
/// Three implementations, opened by `SharedStoreSetting.backend`: `LocalSharedState` (this
/// router's own `state.db`, `Store = local`, the default), `SQLiteSharedState` (one shared SQLite
/// file, `Store = sqlite:/path`) and `PostgresSharedState` (libpq; many gateways, one database).
/// The local one keeps no change numbers (its polls answer the whole set with `latest == 0`),
/// holds no admissions (the config file does) and takes no shipped history; see its type. The daemon never calls either on
/// the packet path: it enforces from its own memory and talks to the shared state from the
/// watchdog and history threads, falling back to the local journal when the backend is away.
///
/// Every mutating call is one statement (or one transaction) that is safe to race with the same
/// call from another gateway; see each method.
public protocol SharedState: HistoryReading {
    /// `sqlite` or `postgresql` (for `tunnelctl status`).
    var backend: String { get }

    // MARK: Windows

    /// Opens `peer`'s window atomically, in one statement: when the peer has no stored window, or
    /// its stored `reconnectAt <= now` (the pause is over), stores `dates` as a new window (epoch
    /// one more than before, use 0, `gateway`, `openedAt = now`) and returns it with
    /// `opened == true`; otherwise returns the stored window unchanged with `opened == false`.
    /// Two gateways racing for the same peer get the same window: exactly one of them opened it.
    func openWindow(peer: String, dates: WindowDates, gateway: String, now: Int64) throws -> WindowOpen

    /// Moves the dates of window `epoch` of `peer` (ended early by its quota, moved by a clock
    /// step). Does nothing when the stored window is another epoch. Returns the stored window after.
    @discardableResult
    func updateWindow(peer: String, epoch: Int64, dates: WindowDates) throws -> SharedWindow?

    /// Adds bytes used in window `epoch` of `peer` (a gateway's delta since its last call) and
    /// returns the window after, whose `usedUp`/`usedDown` are the sum over every gateway. Nil
    /// when the stored window is another epoch (the delta belongs to a window that is over).
    func addUse(peer: String, epoch: Int64, up: UInt64, down: UInt64) throws -> SharedWindow?

    /// A window opened while the backend was away, offered when it is back: the earliest window
    /// wins. Stored when the peer has no window, when the stored one's pause is over at `now`, or
    /// when the stored one was opened later than `w.openedAt`; use counted in the losing window
    /// is added to the winner. Returns the window in force after.
    func reconcile(_ w: SharedWindow, now: Int64) throws -> SharedWindow

    /// `peer`'s stored window, or nil.
    func window(peer: String) throws -> SharedWindow?

    /// Windows changed (opened, moved, used, deleted excepted) after change number `since`,
    /// with the newest change number seen (poll with it next time). `since: 0` returns all.
    func windows(changedAfter since: Int64) throws -> (windows: [SharedWindow], latest: Int64)

    /// Removes `peer`'s window. Returns whether one existed.
    @discardableResult
    func deleteWindow(peer: String) throws -> Bool

    // MARK: Tiers

    /// Sets (`tier`) or clears (nil) `peer`'s runtime tier override.
    func setTier(peer: String, tier: PeerTier?, at: Int64) throws

    /// Overrides changed after change number `since` (cleared ones with `tier == nil`), with the
    /// newest change number seen. `since: 0` returns every override in force.
    func tiers(changedAfter since: Int64) throws -> (changes: [SharedTierChange], latest: Int64)

    // MARK: Admission (Disabled / Expires)

    /// Stores `a` as `a.peer`'s admission (replacing the one stored): a `Disabled` or `Expires`
    /// change made on gateway `a.gateway`, which every gateway applies over its own config.
    func setAdmission(_ a: SharedAdmission) throws

    /// Admissions changed after change number `since`, with the newest change number seen.
    /// `since: 0` returns all.
    func admissions(changedAfter since: Int64) throws -> (changes: [SharedAdmission], latest: Int64)

    // MARK: Settings (retention)

    /// The shared settings row (the retention every gateway prunes with), or nil when no gateway
    /// has stored one yet.
    func settings() throws -> SharedSettings?

    /// Stores `text` (`Settings.sharedJSON`) as the shared settings, made on `gateway` at `at`,
    /// replacing the row whole, in one statement: racing writers each store a whole row and the
    /// last one stays. Returns the row stored (with its change number).
    ///
    /// `ifChange` makes it a compare-and-set: stored only when the row in force is still the one
    /// with that change number (0: only when there is no row yet); nil when another writer's row
    /// came in between (read it again, apply the change to it, try again). Two gateways each
    /// setting a different key then both keep theirs. Without `ifChange`: unconditional.
    func setSettings(text: String, gateway: String, at: Int64, ifChange: Int64?) throws -> SharedSettings?

    // MARK: History

    /// Stores `batch` idempotently: each row is keyed by `(batch.gateway, row id)`, so shipping
    /// the same rows again (after a lost reply, a restart) updates them in place, never adds a
    /// second copy. Rows are written in one transaction.
    func ship(_ batch: HistoryBatch) throws

    /// Rows stored for `gateway` (nil: all gateways), per family (tests, `status`).
    func historyCounts(gateway: String?) throws -> HistoryCounts

    /// Deletes every gateway's history older than `cutoffs` (per family), at most `batch` rows
    /// per statement (each its own short transaction) until none is due. Returns what went.
    @discardableResult
    func pruneHistory(cutoffs: HistoryCutoffs, batch: Int) throws -> HistoryCounts
}

extension SharedState {
    /// Stores the settings row unconditionally (`setSettings(…, ifChange: nil)`).
    @discardableResult
    public func setSettings(text: String, gateway: String, at: Int64) throws -> SharedSettings {
        guard let row = try setSettings(text: text, gateway: gateway, at: at, ifChange: nil) else {
            throw StoreError.sqlite(path: "", operation: "store the shared settings", code: 1, message: "an unconditional write stored nothing")
        }
        return row
    }

    /// Deletes history last touched before `before` in every family; returns how many rows went.
    @discardableResult
    public func pruneHistory(before: Int64, batch: Int) throws -> Int {
        Int(try pruneHistory(cutoffs: HistoryCutoffs(all: before), batch: batch).total)
    }
}

/// A window as the shared state keeps it.
public struct SharedWindow: Hashable, Sendable {
    /// The peer's name.
    public var peer: String
    /// Counts the peer's windows: one more each time one opens. Identifies the window.
    public var epoch: Int64
    /// The dates (end of the connected time, end of the pause).
    public var dates: WindowDates
    /// Bytes the peer sent in this window, over every gateway.
    public var usedUp: UInt64
    /// Bytes the peer received in this window, over every gateway.
    public var usedDown: UInt64
    /// The gateway that opened it (`GatewayName`).
    public var gateway: String
    /// When it opened, Unix epoch ms.
    public var openedAt: Int64

    /// A window.
    public init(peer: String, epoch: Int64, dates: WindowDates, usedUp: UInt64 = 0, usedDown: UInt64 = 0,
                gateway: String, openedAt: Int64) {
        self.peer = peer
        self.epoch = epoch
        self.dates = dates
        self.usedUp = usedUp
        self.usedDown = usedDown
        self.gateway = gateway
        self.openedAt = openedAt
    }
}

extension SharedWindow {
    /// The reconcile rule (`SharedState.reconcile`), one owner for every backend: the window in
    /// force after `offered` (opened while the backend was away) meets `stored` at `now`, and
    /// whether it must be stored. `stored` stays when it is in force and opened no later; else
    /// `offered` is stored as the next epoch, with the use of a losing `stored` still in force
    /// added to it.
    public static func reconciled(stored: SharedWindow?, offered: SharedWindow, now: Int64) -> (window: SharedWindow, store: Bool) {
        let inForce = stored.map { $0.dates.reconnectAt > now } ?? false
        if let s = stored, inForce, s.openedAt <= offered.openedAt { return (s, false) }
        var next = offered
        next.epoch = (stored?.epoch ?? 0) + 1
        if let s = stored, inForce {  // the later window loses; its use counts in the winner
            next.usedUp &+= s.usedUp
            next.usedDown &+= s.usedDown
        }
        return (next, true)
    }
}

/// What `openWindow` found: the window in force and whether this call opened it.
public struct WindowOpen: Hashable, Sendable {
    /// The window in force after the call.
    public var window: SharedWindow
    /// True when this call opened it; false when a window in force was already stored.
    public var opened: Bool

    /// A result.
    public init(window: SharedWindow, opened: Bool) {
        self.window = window
        self.opened = opened
    }
}

/// One tier override change: the tier in force (nil: the override was cleared).
public struct SharedTierChange: Hashable, Sendable {
    /// The peer's name.
    public var peer: String
    /// The override in force, nil when cleared.
    public var tier: PeerTier?
    /// When it was changed, Unix epoch ms.
    public var changedAt: Int64

    /// A change.
    public init(peer: String, tier: PeerTier?, changedAt: Int64) {
        self.peer = peer
        self.tier = tier
        self.changedAt = changedAt
    }
}

/// A peer's admission as the gateways share it: the latest `Disabled` / `Expires`
/// change any gateway made. Neither disabled nor expiring: admitted (an `enable`).
public struct SharedAdmission: Hashable, Sendable {
    /// The peer's name.
    public var peer: String
    /// `Disabled = true`.
    public var disabled: Bool
    /// `Expires =`, Unix epoch ms; nil: none.
    public var expiresAt: Int64?
    /// When the change was made, Unix epoch ms.
    public var changedAt: Int64
    /// The gateway it was made on.
    public var gateway: String

    /// An admission.
    public init(peer: String, disabled: Bool, expiresAt: Int64?, changedAt: Int64, gateway: String) {
        self.peer = peer
        self.disabled = disabled
        self.expiresAt = expiresAt
        self.changedAt = changedAt
        self.gateway = gateway
    }
}
