import Config
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

/// The one way tunnelctl opens this router's store (`StateDirectory/state.db`), for every
/// command that reads or writes it, and the one busy policy it uses there.
///
/// tunnelctl and a running tunneld are two connections on one WAL file: tunneld's writer holds
/// the write lock for a batch at a time. So that no command ever fails with "database is
/// locked" while the daemon writes, and none waits without end:
/// - every lock attempt waits up to `BusyPolicy.timeoutMs` (10 s) for the other connection
///   (SQLite's busy handler, `Connection`);
/// - an open, and every short store call or transaction (`call`), that still finds the store
///   busy after that is tried again, `retries` (5) more times, `pauseMs` (50 ms) apart;
/// - after that the command fails with the store's sentence for it ("… stayed locked by another
///   process during …; try again", `StoreError.busy`), exit 1.
///
/// "Does not exist" is one answer: `read` returns nil (callers say `noHistoryYet` or
/// `noStoreAnswer`), and only writing commands create the store (and the state directory).
/// Every other failure — permission denied, not a store, damaged, a newer schema — is an exit-1
/// error with `StoreError`'s sentence: an unreadable store never reads as an empty one.
enum CLIStore {
    /// How long tunnelctl waits for a store another process holds locked.
    struct BusyPolicy: Sendable {
        /// Longest wait of one lock attempt, in milliseconds.
        var timeoutMs: Int
        /// Further attempts after one that stayed busy for `timeoutMs`.
        var retries: Int
        /// Pause before each further attempt, in milliseconds.
        var pauseMs: Int

        /// What every command uses.
        static let standard = BusyPolicy(timeoutMs: 10_000, retries: 5, pauseMs: 50)
    }

    /// The store of `config` read-only, or nil when none exists yet. Never creates it.
    static func read(_ config: TunnelConfig, policy: BusyPolicy = .standard) throws -> StateStore? {
        try read(path: config.interface.storePath, policy: policy)
    }

    /// The store at `path` read-only, or nil when no file is there.
    static func read(path: String, policy: BusyPolicy = .standard) throws -> StateStore? {
        try call(policy: policy) {
            do {
                return try StateStore(path: path, mode: .readOnly, busyTimeoutMs: policy.timeoutMs)
            } catch StoreError.missing {
                return nil
            }
        }
    }

    /// The store of `config` for writing: the state directory and the store are created when
    /// missing (the daemon need not have run), an older schema is upgraded.
    static func write(_ config: TunnelConfig, policy: BusyPolicy = .standard) throws -> StateStore {
        let dir = config.interface.stateDirectory
        if !Sys.exists(dir) {
            // Each missing directory on the way, 0750 (before the umask), as the unit's StateDirectoryMode.
            var path = dir.hasPrefix("/") ? "" : "."
            for part in dir.split(separator: "/") {
                path += "/" + part
                do throws(SystemError) {
                    try Sys.mkdirIfMissing(path, 0o750)
                } catch {
                    throw CLIError.failure("cannot create the state directory \(dir): \(error.errnoText)")
                }
            }
        }
        return try write(path: config.interface.storePath, policy: policy)
    }

    /// The store at `path` for writing (its directory must exist).
    static func write(path: String, policy: BusyPolicy = .standard) throws -> StateStore {
        try call(policy: policy) { try StateStore(path: path, mode: .readWrite, busyTimeoutMs: policy.timeoutMs) }
    }

    /// Runs one short store call or transaction: tried again while the store stays busy (see the
    /// policy above); a `StoreError` becomes an exit-1 error with its sentence. A transaction
    /// that failed busy was rolled back, so trying it again is safe.
    static func call<T>(policy: BusyPolicy = .standard, _ body: () throws -> T) throws -> T {
        var attempt = 0
        while true {
            do {
                return try body()
            } catch StoreError.busy(let path, let operation) {
                attempt += 1
                if attempt > policy.retries { throw CLIError.failure(StoreError.busy(path: path, operation: operation).description) }
                Sys.sleep(milliseconds: policy.pauseMs)
            } catch let e as StoreError {
                throw CLIError.failure(e.description)
            }
        }
    }
}
