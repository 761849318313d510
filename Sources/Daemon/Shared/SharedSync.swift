import Core
import Engine
import Runtime
import Store
import Synchronization
import WireGuard

/// The daemon's side of the shared store (`Store = postgresql://…`, docs/scale-out.md): the
/// watchdog's `WindowAuthority` (asked on the watchdog's opener thread), and a sync thread that every second
/// pushes what changed here (windows moved or opened without the store, quota deltas, tier
/// changes) and pulls what other gateways changed (windows, summed quota use, tiers).
///
/// Forwarding never waits on the database: the watchdog enforces from its own memory; only a
/// connect that would open a window asks the store first (one statement, bounded by the
/// connection's statement deadline), and without an answer it opens the window alone.
///
/// Quota use is summed across gateways without losing a byte to a race: per window the sync keeps
/// `base`, the meter reading the store already counts. Each pass ships `meter − base` with
/// `addUse`, which answers the sum `S` over every gateway; the difference `S − (base + delta)`
/// (what others used) is credited to the meter as an atomic add, and `base = S`. Bytes the data
/// path counts meanwhile stay above `base` and go with the next pass.
public final class SharedSync: WindowAuthority, @unchecked Sendable {
    // Safe: every mutable property is a Mutex or Atomic, or `thread` (set in `start`, cleared in
    // `stop`, both called from the daemon's main thread only). Each `SharedState` connection is
    // used only under its own Mutex.
    public let gateway: String
    let backend: String
    let connect: @Sendable () throws -> any SharedState
    let log: Logger
    let intervalMs: Int
    let quotas: QuotaMeter
    let handle: @Sendable (String) -> PeerHandle?
    /// Where pulled windows and tier changes go (set by `start`).
    struct Hooks: Sendable {
        var adopt: @Sendable ([String: SharedGrant], Int64) -> Void
        var applyTiers: @Sendable ([SharedTierChange]) -> Void
        var applyAdmissions: @Sendable ([SharedAdmission]) -> Void = { _ in }
    }
    let hooks = Mutex<Hooks?>(nil)
    let now: @Sendable () -> Int64

    enum LocalChange: Sendable, Hashable {
        /// Window `epoch` moved here (ended on its quota, a clock step).
        case move(epoch: Int64, dates: WindowDates)
        /// A window opened here without the store (it did not answer): reconciled, earliest wins.
        case open(dates: WindowDates, used: ByteUse, at: Int64)
    }
    struct Track: Sendable, Hashable {
        var epoch: Int64
        var dates: WindowDates
        /// The meter reading the store already counts (see the type's comment).
        var base: ByteUse
    }
    struct State {
        var tracks: [String: Track] = [:]
        var local: [String: LocalChange] = [:]
        var tiers: [String: (PeerTier?, Int64)] = [:]
        /// Disabled / Expires changes made here (a config reload), not yet pushed.
        var admissions: [String: SharedAdmission] = [:]
        var windowCursor: Int64 = 0
        var tierCursor: Int64 = 0
        var admissionCursor: Int64 = 0
        var lastSyncAt: Int64?
        var outageSince: Int64?
        var lastError = ""
    }
    let state = Mutex(State())
    /// One connection, as the Mutexes below hold it.
    final class Conn: @unchecked Sendable {
        // Safe: used only with the Mutex that holds it locked (one thread at a time).
        let store: any SharedState
        init(_ store: any SharedState) { self.store = store }
    }
    /// The window opener's connection; nil while the store is away (opens then fall back at once).
    let openConn = Mutex<Conn?>(nil)
    /// The sync thread's connection.
    let syncConn = Mutex<Conn?>(nil)
    /// The local store whose history journal (schema v5) the sync ships; nil: no history.
    let journalPath: String?
    /// Its connection (the sync thread's own; opened on first use, dropped on an error).
    final class JournalConn: @unchecked Sendable {
        // Safe: used only with `journalConn` locked (the sync thread).
        let store: StateStore
        init(_ store: StateStore) { self.store = store }
    }
    let journalConn = Mutex<JournalConn?>(nil)
    /// Journal entries per shipped chunk (one transaction in the shared store).
    let chunkRows: Int
    struct JournalStats: Sendable {
        var depth: Int64 = 0
        var shipped: UInt64 = 0
        var missing: UInt64 = 0
        var error: String?
    }
    let journalStats = Mutex(JournalStats())
    public let localOpens = Atomic<UInt64>(0)
    public let sharedOpens = Atomic<UInt64>(0)
    let stopSignal = StopSignal()
    private var thread: WorkerThread?

    /// A sync for `gateway` over connections made by `connect`.
    public init(gateway: String, backend: String, intervalMs: Int = 1_000, log: Logger, quotas: QuotaMeter,
                handle: @escaping @Sendable (String) -> PeerHandle?,
                now: @escaping @Sendable () -> Int64,
                journalPath: String? = nil, chunkRows: Int = 5_000,
                connect: @escaping @Sendable () throws -> any SharedState)
    {
        self.journalPath = journalPath
        self.chunkRows = chunkRows
        self.gateway = gateway
        self.backend = backend
        self.intervalMs = intervalMs
        self.log = log
        self.quotas = quotas
        self.handle = handle
        self.now = now
        self.connect = connect
    }

    /// Starts the sync thread (its first pass runs at once: shared windows and tiers are read);
    /// windows and tier changes other gateways made go to `adopt` and `applyTiers`.
    public func start(adopt: @escaping @Sendable ([String: SharedGrant], Int64) -> Void,
                      applyTiers: @escaping @Sendable ([SharedTierChange]) -> Void,
                      applyAdmissions: @escaping @Sendable ([SharedAdmission]) -> Void = { _ in })
    {
        attach(adopt: adopt, applyTiers: applyTiers, applyAdmissions: applyAdmissions)
        thread = WorkerThread(name: "tv-shared", stopSignal: stopSignal) { [self] in
            pass()
            while stopSignal.sleep(milliseconds: intervalMs) { pass() }  // false once stopped
            pass()  // what changed since the last pass (shutdown's window writes) goes too
        }
    }

    /// Sets where pulled windows and tier changes go, without a thread (`start` calls it; tests
    /// drive `pass()` themselves).
    public func attach(adopt: @escaping @Sendable ([String: SharedGrant], Int64) -> Void,
                       applyTiers: @escaping @Sendable ([SharedTierChange]) -> Void,
                       applyAdmissions: @escaping @Sendable ([SharedAdmission]) -> Void = { _ in })
    {
        hooks.withLock { $0 = Hooks(adopt: adopt, applyTiers: applyTiers, applyAdmissions: applyAdmissions) }
    }

    /// Stops the sync thread after one last pass.
    public func stop() {
        thread?.stop()
        thread = nil
    }

    // MARK: WindowAuthority (the watchdog's opener thread, never the handshake thread)

    public func open(peer: String, dates: WindowDates, now: Int64) -> SharedGrant? {
        let answer: WindowOpen? = openConn.withLock { c in
            guard let store = c?.store else { return nil }
            do {
                return try store.openWindow(peer: peer, dates: dates, gateway: gateway, now: now)
            } catch {
                c = nil  // the sync thread reconnects; until then opens fall back at once
                noteFailure(error, at: now)
                return nil
            }
        }
        guard let answer else { return nil }
        sharedOpens.add(1, ordering: .relaxed)
        let w = answer.window
        state.withLock { s in
            s.tracks[peer] = Track(epoch: w.epoch, dates: w.dates, base: ByteUse(up: w.usedUp, down: w.usedDown))
            s.local[peer] = nil
        }
        return SharedGrant(w, opened: answer.opened)
    }

    // MARK: changes made here (watchdog and control threads)

    /// The watchdog stored `peer`'s window as `dates` at `now` (the history sink calls this for
    /// every window write): our echo of a shared window is ignored; a move of the tracked window
    /// is pushed; anything else is a window opened here without the store, reconciled.
    public func localWindow(peer: String, dates: WindowDates, used: ByteUse, at now: Int64) {
        state.withLock { s in
            if let t = s.tracks[peer] {
                if t.dates == dates { return }
                if now < t.dates.reconnectAt {
                    s.local[peer] = .move(epoch: t.epoch, dates: dates)
                    return
                }
            }
            if case .open(_, _, let at)? = s.local[peer] {
                s.local[peer] = .open(dates: dates, used: used, at: at)
            } else {
                s.local[peer] = .open(dates: dates, used: used, at: now)
                localOpens.add(1, ordering: .relaxed)
            }
        }
    }

    /// A tier override set (or cleared) here: pushed at the next pass.
    public func localTier(peer: String, tier: PeerTier?, at: Int64) {
        state.withLock { $0.tiers[peer] = (tier, at) }
    }

    /// A `Disabled` / `Expires` change made here (this gateway's config reloaded with it): pushed
    /// at the next pass; every gateway then applies it over its own config.
    public func localAdmission(_ a: SharedAdmission) {
        state.withLock { $0.admissions[a.peer] = a }
    }

    /// The store's health now.
    public func health() -> SharedStoreHealth {
        let j = journalStats.withLock { $0 }
        return state.withLock { s in
            SharedStoreHealth(backend: backend, gateway: gateway, lastSyncAtMs: s.lastSyncAt, unavailableSinceMs: s.outageSince,
                         error: s.outageSince == nil ? nil : s.lastError, pending: s.local.count + s.tiers.count + s.admissions.count,
                         localOpens: localOpens.load(ordering: .relaxed), sharedOpens: sharedOpens.load(ordering: .relaxed),
                         journalDepth: j.depth, journalShipped: j.shipped, journalMissing: j.missing, journalError: j.error)
        }
    }

    // MARK: the sync pass (sync thread)

    /// One pass: connect if needed, push local changes, ship quota deltas, pull other gateways'
    /// changes. A failure ends the pass; everything not yet pushed stays queued.
    public func pass() {
        let t = now()
        syncConn.withLock { c in
            do {
                if c == nil { c = Conn(try connect()) }
                guard let store = c?.store else { return }
                if openConn.withLock({ $0 == nil }) {
                    let second = Conn(try connect())
                    openConn.withLock { $0 = second }
                }
                var grants: [String: SharedGrant] = [:]
                try pushWindows(store, now: t, into: &grants)
                try pushTiers(store)
                try pushAdmissions(store)
                try shipUse(store, into: &grants)
                let (tiers, admissions) = try pull(store, into: &grants)
                try shipHistory(store)
                let recovered = state.withLock { s -> Int64? in
                    defer { s.outageSince = nil; s.lastSyncAt = t }
                    return s.outageSince
                }
                if let since = recovered {
                    log.notice("shared store (\(backend)): reachable again after \(DurationFormat.format(ms: (t - since + 500) / 1000 * 1000)); "
                        + "windows opened here meanwhile reconciled (the earliest window wins)")
                }
                let h = hooks.withLock { $0 }
                if !grants.isEmpty { h?.adopt(grants, t) }
                if !tiers.isEmpty { h?.applyTiers(tiers) }
                if !admissions.isEmpty { h?.applyAdmissions(admissions) }
            } catch {
                c = nil
                openConn.withLock { $0 = nil }
                noteFailure(error, at: t)
                refreshJournalDepth()
            }
        }
    }

    /// The journal's depth while nothing ships (status shows it grow during an outage).
    private func refreshJournalDepth() {
        guard let journalPath else { return }
        journalConn.withLock { j in
            do {
                if j == nil { j = JournalConn(try StateStore(path: journalPath, busyTimeoutMs: 2_000)) }
                if let depth = try j?.store.journalDepth() { journalStats.withLock { $0.depth = depth } }
            } catch {
                j = nil
                noteJournal(error)
            }
        }
    }

    private func noteFailure(_ error: any Error, at t: Int64) {
        let first = state.withLock { s -> Bool in
            s.lastError = "\(error)"
            guard s.outageSince == nil else { return false }
            s.outageSince = t
            return true
        }
        if first {
            log.error("shared store (\(backend)): \(error); windows are enforced from memory and opened here alone, "
                + "reconciled when it is back (the earliest window wins); retrying every \(DurationFormat.format(ms: Int64(intervalMs)))")
        }
    }

    private func pushWindows(_ store: any SharedState, now t: Int64, into grants: inout [String: SharedGrant]) throws {
        let local = state.withLock { $0.local }
        for (peer, change) in local.sorted(by: { $0.key < $1.key }) {
            let after: SharedWindow?
            switch change {
            case .move(let epoch, let dates):
                after = try store.updateWindow(peer: peer, epoch: epoch, dates: dates)
            case .open(let dates, let used, let at):
                after = try store.reconcile(
                    SharedWindow(peer: peer, epoch: 0, dates: dates, usedUp: used.up, usedDown: used.down, gateway: gateway, openedAt: at),
                    now: t)
            }
            state.withLock { s in
                if s.local[peer] == change { s.local[peer] = nil }
                guard let w = after else { return }
                track(&s, w, grants: &grants, ours: change)
            }
        }
    }

    /// Makes `w` the tracked window of its peer; a window that differs from what the watchdog
    /// holds goes into `grants` (adopted after the pass).
    private func track(_ s: inout State, _ w: SharedWindow, grants: inout [String: SharedGrant], ours: LocalChange?) {
        let used = ByteUse(up: w.usedUp, down: w.usedDown)
        let old = s.tracks[w.peer]
        var t = Track(epoch: w.epoch, dates: w.dates, base: used)
        var useChanged = false
        let meter = handle(w.peer).flatMap { h in quotas.account(h).map { (h, $0) } }.flatMap { $0.1.window == w.dates.allowedUntil ? $0 : nil }
        if let old, old.epoch == w.epoch {
            if let (h, _) = meter {
                // Others' use since our base: credited to the meter.
                let more = ByteUse(up: used.up > old.base.up ? used.up - old.base.up : 0,
                                   down: used.down > old.base.down ? used.down - old.base.down : 0)
                if more.up > 0 || more.down > 0 { quotas.credit(h, window: w.dates.allowedUntil, bytes: more) }
                t.base = ByteUse(up: max(old.base.up, used.up), down: max(old.base.down, used.down))
            } else {
                useChanged = used != old.base
            }
        } else if let (h, a) = meter {
            // A window newly tracked whose meter runs (a restart): raise the meter to the store's
            // sum; a meter above it holds bytes not shipped yet (they go with the next pass).
            let m = a.used
            let more = ByteUse(up: used.up > m.up ? used.up - m.up : 0, down: used.down > m.down ? used.down - m.down : 0)
            if more.up > 0 || more.down > 0 { quotas.credit(h, window: w.dates.allowedUntil, bytes: more) }
        }
        s.tracks[w.peer] = t
        let expected: WindowDates?
        switch ours {
        case .move(_, let d)?: expected = d
        case .open(let d, _, _)?: expected = d
        case nil: expected = old?.dates
        }
        if expected != w.dates || old?.epoch != w.epoch || useChanged {
            grants[w.peer] = SharedGrant(w, opened: false)
        }
    }

    private func pushTiers(_ store: any SharedState) throws {
        let tiers = state.withLock { $0.tiers }
        for (peer, (tier, at)) in tiers.sorted(by: { $0.key < $1.key }) {
            try store.setTier(peer: peer, tier: tier, at: at)
            state.withLock { s in
                if let (t2, at2) = s.tiers[peer], t2 == tier, at2 == at { s.tiers[peer] = nil }
            }
        }
    }

    private func pushAdmissions(_ store: any SharedState) throws {
        let queued = state.withLock { $0.admissions }
        for (peer, a) in queued.sorted(by: { $0.key < $1.key }) {
            try store.setAdmission(a)
            state.withLock { s in
                if s.admissions[peer] == a { s.admissions[peer] = nil }
            }
        }
    }

    /// Ships each metered window's delta since its base and credits what others used.
    private func shipUse(_ store: any SharedState, into grants: inout [String: SharedGrant]) throws {
        let tracks = state.withLock { $0.tracks }
        for (peer, t) in tracks.sorted(by: { $0.key < $1.key }) {
            guard let h = handle(peer), let a = quotas.account(h), a.window == t.dates.allowedUntil else { continue }
            let m = a.used
            let delta = ByteUse(up: m.up > t.base.up ? m.up - t.base.up : 0, down: m.down > t.base.down ? m.down - t.base.down : 0)
            guard delta.up > 0 || delta.down > 0 else { continue }
            guard let after = try store.addUse(peer: peer, epoch: t.epoch, up: delta.up, down: delta.down) else { continue }
            let sum = ByteUse(up: after.usedUp, down: after.usedDown)
            let shippedTo = ByteUse(up: t.base.up + delta.up, down: t.base.down + delta.down)
            let others = ByteUse(up: sum.up > shippedTo.up ? sum.up - shippedTo.up : 0,
                                 down: sum.down > shippedTo.down ? sum.down - shippedTo.down : 0)
            if others.up > 0 || others.down > 0 { quotas.credit(h, window: t.dates.allowedUntil, bytes: others) }
            state.withLock { s in
                guard var cur = s.tracks[peer], cur.epoch == t.epoch else { return }
                cur.base = ByteUse(up: max(cur.base.up, sum.up), down: max(cur.base.down, sum.down))
                if after.dates != cur.dates {
                    cur.dates = after.dates
                    grants[peer] = SharedGrant(after, opened: false)
                }
                s.tracks[peer] = cur
            }
        }
    }

    /// Other gateways' changes since the last pull.
    private func pull(_ store: any SharedState, into grants: inout [String: SharedGrant]) throws
        -> (tiers: [SharedTierChange], admissions: [SharedAdmission])
    {
        let (wc, tc, ac) = state.withLock { ($0.windowCursor, $0.tierCursor, $0.admissionCursor) }
        let (windows, wLatest) = try store.windows(changedAfter: wc)
        let (tiers, tLatest) = try store.tiers(changedAfter: tc)
        let (admissions, aLatest) = try store.admissions(changedAfter: ac)
        state.withLock { s in
            for w in windows {
                if let t = s.tracks[w.peer], t.epoch > w.epoch { continue }  // an older row than ours
                if s.local[w.peer] != nil { continue }  // ours goes first, then its answer is tracked
                track(&s, w, grants: &grants, ours: nil)
            }
            s.windowCursor = max(s.windowCursor, wLatest)
            s.tierCursor = max(s.tierCursor, tLatest)
            s.admissionCursor = max(s.admissionCursor, aLatest)
        }
        return (tiers, admissions)
    }

    /// Ships the history journal in order, chunk by chunk, for at most ~0.5 s per pass (a backlog
    /// after an outage drains over the next passes). A chunk leaves the journal only after the
    /// shared store committed it; shipping it again (a crash in between) changes nothing there.
    /// The shared store's errors end the pass like any other; the local store's are noted apart.
    private func shipHistory(_ store: any SharedState) throws {
        guard let journalPath else { return }
        let deadline = ContinuousClock.now + .milliseconds(500)
        try journalConn.withLock { j in
            do {
                if j == nil { j = JournalConn(try StateStore(path: journalPath, busyTimeoutMs: 2_000)) }
            } catch {
                noteJournal(error)
                return
            }
            guard let local = j?.store else { return }
            while true {
                let chunk: JournalChunk
                do { chunk = try local.journalChunk(limit: chunkRows) } catch {
                    j = nil
                    noteJournal(error)
                    return
                }
                guard chunk.through > 0 else { break }
                try store.ship(chunk.batch)
                do { try local.journalShipped(through: chunk.through) } catch {
                    j = nil
                    noteJournal(error)
                    return
                }
                if chunk.missing > 0 {
                    log.warning("shared store (\(backend)): \(chunk.missing) journalled history row(s) were pruned locally before "
                        + "they shipped (the outage outlasted the retention); counted in status as lost")
                }
                journalStats.withLock { st in
                    st.shipped &+= UInt64(chunk.batch.count)
                    st.missing &+= UInt64(chunk.missing)
                }
                if chunk.changes < chunkRows || ContinuousClock.now >= deadline { break }
            }
            let depth = (try? local.journalDepth()) ?? 0
            let recovered = journalStats.withLock { st -> Bool in
                st.depth = depth
                defer { st.error = nil }
                return st.error != nil
            }
            if recovered { log.notice("store \(journalPath): the history journal reads again") }
        }
    }

    /// The local journal failed (logged once until it reads again).
    private func noteJournal(_ error: any Error) {
        let first = journalStats.withLock { st -> Bool in
            defer { st.error = "\(error)" }
            return st.error == nil
        }
        if first { log.error("store \(journalPath ?? ""): history journal: \(error); history waits in the store and ships when it reads again") }
    }
}
