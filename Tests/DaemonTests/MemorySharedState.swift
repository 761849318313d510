import Core
import Store
import Synchronization

/// The shared store's contract (`SharedState`) in memory, for the daemon's tests: many "gateways"
/// (each a `SharedSync` over its own `Handle`) share one `MemorySharedState`. `down` makes every
/// call fail like an unreachable database.
final class MemorySharedState: Sendable {
    struct Row: Sendable { var w: SharedWindow; var change: Int64 }
    struct Data: Sendable {
        var windows: [String: Row] = [:]
        var tiers: [String: (SharedTierChange, Int64)] = [:]
        var admissions: [String: (SharedAdmission, Int64)] = [:]
        var settings: SharedSettings?
        var change: Int64 = 0
        var down = false
        var calls = 0
        /// History rows by (gateway, family, id): the last shipped value of each.
        var flows: [String: Flow] = [:]
        var sessions: [String: Session] = [:]
        var refusals: [String: Refusal] = [:]
        var markers: [String: Marker] = [:]
        var shipCalls = 0
    }
    let data = Mutex(Data())

    struct Unreachable: Error, CustomStringConvertible { var description: String { "connection refused (test)" } }

    var down: Bool {
        get { data.withLock { $0.down } }
        set { data.withLock { $0.down = newValue } }
    }

    /// A connection.
    func connect() throws -> any SharedState {
        if down { throw Unreachable() }
        return Handle(self)
    }

    final class Handle: SharedState, @unchecked Sendable {
        // Safe: the only state is the shared Mutex.
        let m: MemorySharedState
        init(_ m: MemorySharedState) { self.m = m }
        var backend: String { "memory" }

        func with<T>(_ body: (inout Data) throws -> T) throws -> T {
            try m.data.withLock { d in
                if d.down { throw Unreachable() }
                d.calls += 1
                return try body(&d)
            }
        }

        func openWindow(peer: String, dates: WindowDates, gateway: String, now: Int64) throws -> WindowOpen {
            try with { d in
                if let r = d.windows[peer], r.w.dates.reconnectAt > now { return WindowOpen(window: r.w, opened: false) }
                d.change += 1
                let w = SharedWindow(peer: peer, epoch: (d.windows[peer]?.w.epoch ?? 0) + 1, dates: dates, gateway: gateway, openedAt: now)
                d.windows[peer] = Row(w: w, change: d.change)
                return WindowOpen(window: w, opened: true)
            }
        }

        func updateWindow(peer: String, epoch: Int64, dates: WindowDates) throws -> SharedWindow? {
            try with { d in
                guard var r = d.windows[peer] else { return nil }
                if r.w.epoch == epoch {
                    d.change += 1
                    r.w.dates = dates
                    r.change = d.change
                    d.windows[peer] = r
                }
                return r.w
            }
        }

        func addUse(peer: String, epoch: Int64, up: UInt64, down: UInt64) throws -> SharedWindow? {
            try with { d in
                guard var r = d.windows[peer], r.w.epoch == epoch else { return nil }
                d.change += 1
                r.w.usedUp += up
                r.w.usedDown += down
                r.change = d.change
                d.windows[peer] = r
                return r.w
            }
        }

        func reconcile(_ w: SharedWindow, now: Int64) throws -> SharedWindow {
            try with { d in
                let (n, store) = SharedWindow.reconciled(stored: d.windows[w.peer]?.w, offered: w, now: now)
                guard store else { return n }
                d.change += 1
                d.windows[w.peer] = Row(w: n, change: d.change)
                return n
            }
        }

        func window(peer: String) throws -> SharedWindow? { try with { $0.windows[peer]?.w } }

        func windows(changedAfter since: Int64) throws -> (windows: [SharedWindow], latest: Int64) {
            try with { d in
                let rows = d.windows.values.filter { $0.change > since }.sorted { $0.change < $1.change }
                return (rows.map(\.w), rows.last?.change ?? since)
            }
        }

        func deleteWindow(peer: String) throws -> Bool { try with { $0.windows.removeValue(forKey: peer) != nil } }

        func setTier(peer: String, tier: PeerTier?, at: Int64) throws {
            try with { d in
                d.change += 1
                d.tiers[peer] = (SharedTierChange(peer: peer, tier: tier, changedAt: at), d.change)
            }
        }

        func tiers(changedAfter since: Int64) throws -> (changes: [SharedTierChange], latest: Int64) {
            try with { d in
                let rows = d.tiers.values.filter { $0.1 > since && (since > 0 || $0.0.tier != nil) }.sorted { $0.1 < $1.1 }
                return (rows.map(\.0), rows.last?.1 ?? since)
            }
        }

        func setAdmission(_ a: SharedAdmission) throws {
            try with { d in
                d.change += 1
                d.admissions[a.peer] = (a, d.change)
            }
        }

        func admissions(changedAfter since: Int64) throws -> (changes: [SharedAdmission], latest: Int64) {
            try with { d in
                let rows = d.admissions.values.filter { $0.1 > since }.sorted { $0.1 < $1.1 }
                return (rows.map(\.0), max(since, rows.last?.1 ?? since))
            }
        }

        func settings() throws -> SharedSettings? { try with { $0.settings } }

        func setSettings(text: String, gateway: String, at: Int64, ifChange: Int64?) throws -> SharedSettings? {
            try with { d in
                if let expected = ifChange, (d.settings?.change ?? 0) != expected { return nil }
                d.change += 1
                d.settings = SharedSettings(text: text, changedAt: at, gateway: gateway, change: d.change)
                return d.settings!
            }
        }

        func ship(_ batch: HistoryBatch) throws {
            try with { d in
                d.shipCalls += 1
                for f in batch.flows { d.flows["\(batch.gateway)/\(f.id)"] = f }
                for r in batch.sessions { d.sessions["\(batch.gateway)/\(r.id)"] = r }
                for r in batch.refusals { d.refusals["\(batch.gateway)/\(r.id)"] = r }
                for r in batch.markers { d.markers["\(batch.gateway)/\(r.id)"] = r }
            }
        }

        func historyCounts(gateway: String?) throws -> HistoryCounts {
            try with { d in
                func n(_ keys: Dictionary<String, some Any>.Keys) -> Int64 {
                    Int64(keys.filter { gateway == nil || $0.hasPrefix(gateway! + "/") }.count)
                }
                return HistoryCounts(flows: n(d.flows.keys), sessions: n(d.sessions.keys), refusals: n(d.refusals.keys), markers: n(d.markers.keys))
            }
        }
        func pruneHistory(cutoffs: HistoryCutoffs, batch: Int) throws -> HistoryCounts { HistoryCounts() }

        // Reading: the rows of one family, with the gateway from their key (the daemon's tests
        // never read history back through the shared state; the store suite covers the orders).
        func rows<R: Sendable>(_ all: [String: R], _ keep: (R) -> Bool, gateway: String?) -> [Gatewayed<R>] {
            all.compactMap { key, r in
                let g = String(key.prefix { $0 != "/" })
                return (gateway == nil || g == gateway) && keep(r) ? Gatewayed(gateway: g, row: r) : nil
            }
        }
        func historyFlows(since: Int64, peer: String?, gateway: String?, blockedOnly: Bool, limit: Int) throws -> [Gatewayed<Flow>] {
            try with { d in Array(rows(d.flows, { $0.lastSeen >= since && (peer == nil || $0.peer == peer) && (!blockedOnly || $0.verdict == .block || $0.verdict == .reject) }, gateway: gateway).prefix(limit)) }
        }
        func historyRefusals(since: Int64, peer: String?, gateway: String?, limit: Int) throws -> [Gatewayed<Refusal>] {
            try with { d in Array(rows(d.refusals, { $0.lastAt >= since && (peer == nil || $0.peer == peer) }, gateway: gateway).prefix(limit)) }
        }
        func historySessions(since: Int64, peer: String?, gateway: String?, limit: Int) throws -> [Gatewayed<Session>] {
            try with { d in Array(rows(d.sessions, { ($0.endedAt ?? .max) >= since && (peer == nil || $0.peer == peer) }, gateway: gateway).prefix(limit)) }
        }
        func historyMarkers(since: Int64, gateway: String?, limit: Int) throws -> [Gatewayed<Marker>] {
            try with { d in Array(rows(d.markers, { $0.at >= since }, gateway: gateway).prefix(limit)) }
        }
        func readingOneSnapshot<T>(_ body: () throws -> T) throws -> T { try body() }
    }
}
