import Core
import Runtime
import Store
import Synchronization

/// The watchdog's own store connection (docs/session.md, "Durable window writes"): opening,
/// moving and ending a window, a session refusal and a tier change are written synchronously here,
/// never through the data path's droppable `StoreWriter` queue, so a flooded queue or a crash right
/// after cannot forget a window. A window is in the store before the handshake that opened it is
/// answered, so before the peer's first data packet.
///
/// A write that fails (store busy past a short timeout, disk full, read-only) is kept — the latest
/// per peer for windows and tiers, up to `refusalBacklog` refusals — and retried on every
/// watchdog tick (`retry()`); the watchdog keeps enforcing from memory meanwhile. The outage is
/// logged once when it starts and once when it ends, with what was retried and what was dropped.
///
/// Thread-safe: one mutex over the connection and the backlog. Writes are small (one row) and rare
/// (per window, per refused handshake); the busy timeout is short so a long lock held by another
/// process delays a handshake by at most `busyTimeoutMs`.
public final class WindowLedger: @unchecked Sendable {
    // Safe: every stored property is immutable or a Mutex/Atomic.
    /// `opened`: the watchdog opened it at `at` (the store numbers it as the peer's next window).
    enum WindowOp: Equatable { case put(SessionWindow, opened: Bool, at: Int64), delete }
    struct State {
        var store: StateStore?
        var windows: [String: WindowOp] = [:]
        var tiers: [String: (PeerTier?, Int64)] = [:]
        var refusals: [RefusalEvent] = []
        var failingSince: Int64?
        var lastError = ""
    }

    let path: String
    /// This router's `GatewayName`, recorded on the windows it opens.
    let gateway: String
    let log: Logger
    let busyTimeoutMs: Int
    let refusalBacklog: Int
    private let state: Mutex<State>
    /// Writes that failed at least once (then retried).
    public let failedWrites = Atomic<UInt64>(0)
    /// Refusal records dropped because the backlog was full during an outage.
    public let droppedRefusals = Atomic<UInt64>(0)

    /// A ledger on the store at `path` (opened now; if that fails, at the next retry).
    public init(path: String, gateway: String = "", log: Logger, busyTimeoutMs: Int = 50, refusalBacklog: Int = 4096) {
        self.path = path
        self.gateway = gateway
        self.log = log
        self.busyTimeoutMs = busyTimeoutMs
        self.refusalBacklog = refusalBacklog
        var s = State()
        s.store = WindowLedger.open(path, busyTimeoutMs)
        state = Mutex(s)
    }

    private static func open(_ path: String, _ busyTimeoutMs: Int) -> StateStore? {
        guard let store = try? StateStore(path: path, busyTimeoutMs: busyTimeoutMs) else { return nil }
        store.connection.busyRetries = 0
        return store
    }

    /// True while writes are failing (some are waiting for the next retry).
    public var isFailing: Bool { state.withLock { $0.failingSince != nil } }

    /// The outage in progress: since when, and its error (nil while writes succeed).
    public var outage: (sinceMs: Int64, error: String)? {
        state.withLock { s in s.failingSince.map { ($0, s.lastError) } }
    }

    /// Writes waiting for a retry.
    public var backlog: Int { state.withLock { $0.windows.count + $0.tiers.count + $0.refusals.count } }

    /// Stores `peer`'s window now (`opened`: the watchdog just opened it). A window opened and
    /// then moved before the store took it stays an opening (the latest dates, the opening's time).
    public func putWindow(_ w: SessionWindow, opened: Bool = false, at now: Int64) {
        state.withLock { s in
            if !opened, case let .put(_, true, openedAt)? = s.windows[w.peer] {
                s.windows[w.peer] = .put(w, opened: true, at: openedAt)
            } else {
                s.windows[w.peer] = .put(w, opened: opened, at: now)
            }
            flushLocked(&s, now: now)
        }
    }

    /// Removes `peer`'s window now.
    public func deleteWindow(peer: String, at now: Int64) {
        state.withLock { s in
            s.windows[peer] = .delete
            flushLocked(&s, now: now)
        }
    }

    /// Records a refused handshake now (coalesced into its window's row by the store).
    public func refusal(_ e: RefusalEvent, at now: Int64) {
        state.withLock { s in
            if s.refusals.count >= refusalBacklog {
                droppedRefusals.add(1, ordering: .relaxed)
            } else {
                s.refusals.append(e)
            }
            flushLocked(&s, now: now)
        }
    }

    /// Sets (or, with nil, clears) `peer`'s tier override now. Returns the error text when the
    /// store did not take it yet (it is retried; the change is in force in memory meanwhile).
    @discardableResult
    public func setTier(peer: String, _ tier: PeerTier?, at now: Int64) -> String? {
        state.withLock { s in
            s.tiers[peer] = (tier, now)
            flushLocked(&s, now: now)
            return s.tiers[peer] == nil ? nil : s.lastError
        }
    }

    /// Retries what failed before (the watchdog ticker calls this every tick).
    public func retry(now: Int64) {
        state.withLock { s in
            guard s.failingSince != nil || !s.windows.isEmpty || !s.tiers.isEmpty || !s.refusals.isEmpty else { return }
            flushLocked(&s, now: now)
        }
    }

    /// Writes the backlog in one transaction; on failure keeps it and notes the outage.
    private func flushLocked(_ s: inout State, now: Int64) {
        if s.store == nil { s.store = WindowLedger.open(path, busyTimeoutMs) }
        do {
            guard let store = s.store else { throw StoreError.missing(path: path) }
            let (windows, tiers, refusals) = (s.windows, s.tiers, s.refusals)
            try store.connection.transaction {
                for (peer, op) in windows.sorted(by: { $0.key < $1.key }) {
                    switch op {
                    case let .put(w, opened, at): try store.putWindow(w, opened: opened, at: at, gateway: gateway)
                    case .delete: try store.deleteWindow(peer: peer)
                    }
                }
                for (peer, (tier, at)) in tiers.sorted(by: { $0.key < $1.key }) {
                    if let tier { try store.setTier(peer: peer, tier: tier, at: at) } else { try store.clearTier(peer: peer) }
                }
                for r in refusals { try store.recordRefusal(r) }
            }
            s.windows.removeAll(keepingCapacity: true)
            s.tiers.removeAll(keepingCapacity: true)
            s.refusals.removeAll(keepingCapacity: true)
            if let since = s.failingSince {
                s.failingSince = nil
                let dropped = droppedRefusals.load(ordering: .relaxed)
                log.notice("store: window writes work again after \(DurationFormat.format(ms: now - since)) "
                    + "(written late: \(windows.count) window(s), \(tiers.count) tier change(s), \(refusals.count) refusal(s); "
                    + "refusals dropped so far: \(dropped))")
            }
        } catch {
            failedWrites.add(1, ordering: .relaxed)
            s.lastError = "\(error)"
            if s.failingSince == nil {
                s.failingSince = now
                log.error("store: cannot write a window, tier or refusal (\(error)); the watchdog enforces from memory and retries every tick")
            }
            // A connection that failed may be stale (file replaced, directory remounted): reopen next time.
            if case StoreError.busy = error {} else { s.store = nil }
        }
    }
}
