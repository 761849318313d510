import Engine
import Capture
import Core
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Runtime
import Store

/// The daemon's scheduled prune (docs/store.md): the same `Pruner` and
/// `CaptureFiles.prune` as `tunnelctl prune`, run once at start and then every `intervalMs`
/// (hourly), on a thread of its own with its own `Store` connection. The pruner's batches are
/// short transactions with pauses in between, so the `StoreWriter` keeps its lock waits
/// short; nothing here touches the data path.
///
/// Retention is read from the settings row before every run (a `tunnelctl retention set`
/// takes effect at the next run). A row that is not JSON is logged and the run is skipped —
/// the operator's limits are unknown then, and deleting history on factory limits could lose
/// what they meant to keep — until the row is fixed; missing or bad fields take factory values.
///
/// With a shared store (`Store = postgresql://…`) the retention is the shared store's
/// (`SharedState.settings`, schema v5: the same for every gateway; capture stays this gateway's),
/// read before every run and kept in the local row (and in memory), so a run while the database
/// is away prunes with the last shared retention read — the fall-back is logged once, and once
/// when it reads again. A shared store holding no retention yet leaves the local row's. Each run
/// prunes the shared history too, with the same retention and cut-offs, in bounded statements
/// (`SharedState.pruneHistory`): every gateway's rows. A shared store that cannot be reached is
/// logged and tried again at the next run; the local prune never waits for it.
public final class PruneSchedule: @unchecked Sendable {
    // Safe: `stopping`, `runs` and `lastReport` are guarded by `condition` (a `ConditionLock`, so
    // the wait between runs is on the monotonic clock); `store` is used
    // only by the schedule's thread (or by `runOnce` when the thread is not started), and so is
    // `sharedState` (the connection to the shared store, opened on first use).

    private let store: StateStore
    private let captureDirectory: String
    private let log: Logger
    private let now: @Sendable () -> Int64
    private let intervalMs: Int
    private let settingsIntervalMs: Int
    private let options: Pruner.Options
    private let condition = ConditionLock()
    private var stopping = false
    private var runs = 0
    private var lastReport: PruneReport?
    private var thread: WorkerThread?
    private let sharedConnect: (@Sendable () throws -> any SharedState)?
    private var sharedState: (any SharedState)?
    private var lastShared: HistoryCounts?
    /// The shared retention last read (the schedule's thread only), and whether the last read failed.
    private var lastSharedSettings: (settings: Settings, row: SharedSettings)?
    private var sharedSettingsDown = false
    private var origin: RetentionOrigin?

    /// A schedule on the store at `storePath`, pruning `captureDirectory`'s pcap files too, and
    /// the shared store's history when `shared` connects to one.
    public init(storePath: String, captureDirectory: String, log: Logger, now: @escaping @Sendable () -> Int64,
                intervalMs: Int = 3_600_000, options: Pruner.Options = Pruner.Options(),
                shared: (@Sendable () throws -> any SharedState)? = nil, settingsIntervalMs: Int = 60_000) throws {
        store = try StateStore(path: storePath, busyTimeoutMs: 10_000)
        sharedConnect = shared
        self.captureDirectory = captureDirectory
        self.log = log
        self.now = now
        self.intervalMs = max(1000, intervalMs)
        self.settingsIntervalMs = max(100, settingsIntervalMs)
        self.options = options
    }

    /// The settings the daemon runs with: the row, decoded tolerantly; factory values (logged)
    /// when it is not JSON or cannot be read. Defaulted fields are logged at info.
    public static func loadSettings(_ store: StateStore, log: Logger) -> Settings {
        do {
            let d = try store.settings()
            if !d.wasEmpty {
                for f in d.defaulted { log.info("settings: \(f.path) is \(f.reason); using its factory value") }
                for u in d.unknown { log.info("settings: unknown field '\(u)' ignored") }
            }
            return d.settings
        } catch {
            log.error("settings: \(error); running with factory values (fix with 'tunnelctl retention set KEY=VALUE')")
            return .factory
        }
    }

    /// Starts the thread: one prune now, then one every interval.
    public func start() {
        guard thread == nil else { return }
        thread = WorkerThread(name: "tv-prune") { [self] in loop() }
    }

    /// Stops the thread (waits for a prune in progress to finish its current family's batches).
    public func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
        thread?.join()
        thread = nil
    }

    /// Completed runs and the last report (tests, status).
    public var status: (runs: Int, last: PruneReport?) {
        condition.lock()
        defer { condition.unlock() }
        return (runs, lastReport)
    }

    /// Rows the last shared prune deleted (nil: none ran, or it failed).
    public var lastSharedPrune: HistoryCounts? {
        condition.lock()
        defer { condition.unlock() }
        return lastShared
    }

    /// Environment override of how often the shared retention is read between runs (ms), for tests.
    public static let settingsIntervalVariable = "TUNNELD_SETTINGS_POLL_MS"

    /// Where the retention of the last run came from (tests, status).
    public enum RetentionOrigin: Hashable, Sendable {
        /// This gateway's settings row (`Store = local`, or a shared store holding none yet).
        case local
        /// The shared store's row, stored on `gateway` at `at`.
        case shared(gateway: String, at: Int64)
        /// The shared store could not be read: the last shared retention read (kept in the local row).
        case lastShared(gateway: String?, at: Int64?)
    }

    /// Where the last run's retention came from (nil before the first read).
    public var retentionOrigin: RetentionOrigin? {
        condition.lock()
        defer { condition.unlock() }
        return origin
    }

    private enum SharedRead {
        case row(SharedSettings)
        case none
        case failed(any Error)
    }

    /// The shared settings row (the schedule's connection, opened on first use).
    private func readSharedSettings() -> SharedRead? {
        guard let connect = sharedConnect else { return nil }
        do {
            let state = try sharedState ?? connect()
            sharedState = state
            return try state.settings().map(SharedRead.row) ?? SharedRead.none
        } catch {
            sharedState = nil
            return .failed(error)
        }
    }

    /// The settings this run prunes with: the shared retention when there is a shared store that
    /// holds one (cached into the local row when it differs), else the local row; nil: skip the run.
    private func runSettings() -> Settings? {
        let text: String?
        var local: Settings?
        var localError: String?
        var unreadable = false
        do {
            text = try store.settingsText()
            do { local = try Settings.decode(text).settings } catch { localError = "\(error)" }
        } catch {
            text = nil
            unreadable = true
            localError = "cannot read the settings: \(error)"
        }
        var origin = RetentionOrigin.local
        defer {
            condition.lock()
            self.origin = origin
            condition.unlock()
        }
        switch readSharedSettings() {
        case .row(let row)?:
            let shared: Settings
            do { shared = try Settings.decodeShared(row.text).settings } catch {
                log.error("prune: the shared store's settings row (set on \(row.gateway)) is not usable: \(error); "
                    + "scheduled prune skipped until it is fixed ('tunnelctl retention set KEY=VALUE')")
                return nil
            }
            if sharedSettingsDown {
                log.notice("settings: the shared store's retention reads again")
                sharedSettingsDown = false
            }
            let merged = (local ?? .factory).withRetention(of: shared)
            if lastSharedSettings?.row.change != row.change {  // at start, then once per change
                let values = Settings.sharedKeys.map { "\($0)=\(merged.value(forKey: $0) ?? "?")" }.joined(separator: " ")
                log.info("settings: retention from the shared store (set on \(row.gateway) at \(TimeText.iso(row.changedAt))): \(values)")
            }
            // This gateway's copy: a run while the database is away prunes with it. A local row
            // that is not JSON is left for the operator to see (its capture values are unknown).
            if localError == nil && (local?.retention != shared.retention || text == nil) {
                do { try store.putSettings(merged, at: now()) } catch {
                    log.warning("settings: could not keep the shared retention in \(store.connection.path): \(error)")
                }
            }
            lastSharedSettings = (merged, row)
            origin = .shared(gateway: row.gateway, at: row.changedAt)
            return merged
        case .failed(let error)?:
            if !sharedSettingsDown {
                sharedSettingsDown = true
                log.warning("settings: cannot read the shared store's retention (\(error)); pruning with the last one "
                    + "\(lastSharedSettings.map { "read (set on \($0.row.gateway) at \(TimeText.iso($0.row.changedAt)))" } ?? "kept in this gateway's state.db") until it reads again")
            }
            if let last = lastSharedSettings {
                origin = .lastShared(gateway: last.row.gateway, at: last.row.changedAt)
                return (local ?? last.settings).withRetention(of: last.settings)
            }
            origin = .lastShared(gateway: nil, at: nil)
        case .none?:
            if sharedSettingsDown {
                log.notice("settings: the shared store reads again (it holds no retention: this gateway's own applies)")
                sharedSettingsDown = false
            }
        case nil:
            break
        }
        guard let local else {
            log.error(unreadable ? "prune: \(localError ?? ""); skipped"
                : "prune: \(localError ?? ""); scheduled prune skipped until the row is fixed ('tunnelctl retention show')")
            return nil
        }
        return local
    }

    /// The shared store's prune with `retention` at `now` (after the local one).
    private func pruneShared(_ retention: RetentionSettings, now: Int64) {
        guard let connect = sharedConnect else { return }
        let cutoffs = HistoryCutoffs(retention: retention, now: now)
        var gone: HistoryCounts?
        do {
            let state = try sharedState ?? connect()
            sharedState = state
            let t0 = SystemClock().monotonicNanoseconds()
            let n = try state.pruneHistory(cutoffs: cutoffs, batch: HistoryCutoffs.rowsPerStatement)
            gone = n
            if n.total > 0 {
                log.info("prune: removed \(n.total) rows of the shared store (\(state.backend)): flows=\(n.flows) sessions=\(n.sessions) "
                    + "refusals=\(n.refusals) markers=\(n.markers), in \((SystemClock().monotonicNanoseconds() - t0) / 1_000_000) ms")
            }
        } catch {
            sharedState = nil  // a new connection next time (a failover, a restart)
            log.error("prune of the shared store: \(error); tried again at the next scheduled prune")
        }
        condition.lock()
        lastShared = gone
        condition.unlock()
    }

    /// One prune now, on the caller's thread; nil when skipped (settings unreadable) or failed.
    @discardableResult
    public func runOnce() -> PruneReport? {
        guard let settings = runSettings() else { return nil }
        do {
            let t0 = SystemClock().monotonicNanoseconds()
            let report = try Pruner(store: store, options: options).run(
                retention: settings.retention, now: now(),
                capture: { [captureDirectory] in try CaptureFiles.prune(directory: captureDirectory, $0, keepNewest: true) })
            let files = report.capture?.files ?? 0
            if report.totalRows > 0 || files > 0 {
                let parts = PruneFamily.allCases.compactMap { f in (report.rows[f] ?? 0) > 0 ? "\(f.rawValue)=\(report.rows[f]!)" : nil }
                log.info("prune: removed \(report.totalRows) rows (\(parts.joined(separator: " "))), \(files) pcap files, "
                    + "\(report.bytesReclaimed) bytes given back, in \((SystemClock().monotonicNanoseconds() - t0) / 1_000_000) ms")
            }
            pruneShared(settings.retention, now: now())
            condition.lock()
            runs += 1
            lastReport = report
            condition.unlock()
            return report
        } catch {
            log.error("prune: \(error)")
            return nil
        }
    }

    /// Reads the shared retention between runs (with a shared store, every `settingsIntervalMs`)
    /// and keeps it in the local row: a change made on another gateway reaches this gateway's copy
    /// (and the pcap limits the capture poller reads from it) within that time, and an outage
    /// that starts before the next run keeps it.
    public func refreshSettings() {
        guard sharedConnect != nil else { return }
        _ = runSettings()
    }

    private func loop() {
        let clock = SystemClock()
        var nextRun: UInt64 = 0
        while true {
            condition.lock()
            let done = stopping
            condition.unlock()
            if done { return }
            if clock.monotonicNanoseconds() >= nextRun {
                runOnce()
                nextRun = clock.monotonicNanoseconds() + UInt64(intervalMs) * 1_000_000
            } else {
                refreshSettings()
            }
            condition.lock()
            let step = sharedConnect == nil ? UInt64(intervalMs) : UInt64(min(intervalMs, settingsIntervalMs))
            let deadline = min(nextRun, clock.monotonicNanoseconds() + step * 1_000_000)
            while !stopping && condition.wait(untilMonotonic: deadline) {}
            condition.unlock()
        }
    }
}
