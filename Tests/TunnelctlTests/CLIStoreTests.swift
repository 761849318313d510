import Foundation
import Store
import Testing

@testable import tunnelctl

/// `CLIStore`'s busy policy against a second connection that holds the store locked, as
/// tunneld's writer does: a lock released within the policy is waited out, one held longer is
/// the store's "stayed locked … try again" error (exit 1), never "database is locked" at once.
@Suite struct CLIStoreTests {
    /// A policy short enough for tests: about 20 × (20 + 10) ms ≈ 600 ms in all.
    static let quick = CLIStore.BusyPolicy(timeoutMs: 20, retries: 20, pauseMs: 10)
    /// About 3 × (20 + 10) ms ≈ 90 ms in all.
    static let impatient = CLIStore.BusyPolicy(timeoutMs: 20, retries: 2, pauseMs: 10)

    final class Scratch {
        let dir: String
        var path: String { dir + "/state.db" }
        init() throws {
            dir = FileManager.default.temporaryDirectory.appendingPathComponent("tv-clistore-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            _ = try CLIStore.write(path: path)
        }
        deinit { try? FileManager.default.removeItem(atPath: dir) }
    }

    /// Another connection on `path` holds a lock for `ms` milliseconds, on its own thread;
    /// returns once the lock is taken. `exclusive` locks out readers too (a WAL reader is
    /// otherwise never blocked); without it, only writers wait.
    static func holdLock(_ path: String, exclusive: Bool, forMs ms: Int) -> DispatchSemaphore {
        let taken = DispatchSemaphore(value: 0)
        let released = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            do {
                let c = try Connection(path: path, mode: .readWrite, busyTimeoutMs: 0)
                if exclusive {
                    try c.execute("PRAGMA locking_mode=EXCLUSIVE")
                    try c.execute("BEGIN EXCLUSIVE")
                } else {
                    try c.execute("BEGIN IMMEDIATE")
                }
                taken.signal()
                Thread.sleep(forTimeInterval: Double(ms) / 1000)
                try c.execute("COMMIT")
            } catch {
                Issue.record("the lock holder failed: \(error)")
                taken.signal()
            }
            released.signal()
        }
        taken.wait()
        return released
    }

    @Test func theStandardPolicyIsTheDocumentedOne() {
        let p = CLIStore.BusyPolicy.standard
        #expect(p.timeoutMs == 10_000 && p.retries == 5 && p.pauseMs == 50)
    }

    @Test func aReadWaitsOutAShortLock() throws {
        let s = try Scratch()
        let released = Self.holdLock(s.path, exclusive: true, forMs: 200)
        let store = try CLIStore.read(path: s.path, policy: Self.quick)
        let markers = try CLIStore.call(policy: Self.quick) { try store?.markers(since: .min) }
        #expect(store != nil && markers?.isEmpty == true)
        released.wait()
    }

    @Test func aReadLockedLongerThanThePolicyIsTheStoreError() throws {
        let s = try Scratch()
        let released = Self.holdLock(s.path, exclusive: true, forMs: 1_500)
        defer { released.wait() }
        do {
            _ = try CLIStore.read(path: s.path, policy: Self.impatient)
            Issue.record("the read did not fail while the store was locked")
        } catch let e as CLIError {
            #expect(e.code == .failure)
            #expect(e.message.hasPrefix("the store at \(s.path) stayed locked by another process during ") && e.message.hasSuffix("; try again"),
                    "\(e.message)")
        }
    }

    @Test func aWriteWaitsOutAShortLockAndFailsOnALongOne() throws {
        let s = try Scratch()
        let store = try CLIStore.write(path: s.path, policy: Self.quick)
        let mark = { try store.addMarker(MarkerInput(at: 1_000, label: "x", kind: .manual, detail: nil)) }
        var released = Self.holdLock(s.path, exclusive: false, forMs: 200)
        _ = try CLIStore.call(policy: Self.quick, mark)
        released.wait()
        released = Self.holdLock(s.path, exclusive: false, forMs: 1_500)
        defer { released.wait() }
        do {
            _ = try CLIStore.call(policy: Self.impatient, mark)
            Issue.record("the write did not fail while the store was locked")
        } catch let e as CLIError {
            #expect(e.code == .failure && e.message.contains("stayed locked by another process"), "\(e.message)")
        }
        #expect(try CLIStore.call { try store.markers(since: .min) }.count == 1, "only the first marker was written")
    }

    @Test func aMissingStoreReadsAsNilAndAnUnreadableOneIsAnError() throws {
        let s = try Scratch()
        let other = s.dir + "/none/state.db"
        #expect(try CLIStore.read(path: other) == nil)
        do {
            _ = try CLIStore.read(path: s.dir)
            Issue.record("a directory read as a store")
        } catch let e as CLIError {
            #expect(e.code == .failure)
        }
    }
}
