// libFuzzer harness for a corrupt `state.db` (Sources/Store): the input is written as the store
// file, then opened read-only and read-write through `StateStore` and read with every query the
// CLI uses. A damaged file must give a clear `StoreError` (not a database, corrupt, schema too
// new/old, …), never a trap. Seeds are real stores (make_seeds.py). Build and run with
// fuzz/statedb/run.sh.
import Core
import Glibc
import Store

let workDirectory: String = {
    var template = Array("/tmp/tv-fuzz-statedb.XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
}()
let dbPath = workDirectory + "/state.db"

/// Every read the CLI does; errors are the expected outcome for most inputs.
func readEverything(_ s: StateStore) {
    _ = try? s.schemaVersion
    _ = try? s.flows(limit: 50)
    _ = try? s.maxFlowId()
    _ = try? s.refusals(limit: 50)
    _ = try? s.sessions(limit: 50)
    _ = try? s.openSessions()
    _ = try? s.windows()
    _ = try? s.markers(limit: 50)
    _ = try? s.audits()
    _ = try? s.openAudit()
    _ = try? s.settings()
    _ = try? s.daemonState()
    _ = try? s.lastProvenAlive()
    _ = try? s.tierOverrides()
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    for suffix in ["", "-wal", "-shm", "-journal"] { unlink(dbPath + suffix) }
    guard let f = fopen(dbPath, "we") else { fatalError("cannot write \(dbPath)") }
    if size > 0 { _ = fwrite(data, 1, size, f) }
    fclose(f)
    do {
        let s = try StateStore(path: dbPath, mode: .readOnly, busyTimeoutMs: 10)
        readEverything(s)
    } catch {
        _ = "\(error)"  // the message a person reads
    }
    do {
        let s = try StateStore(path: dbPath, mode: .readWrite, busyTimeoutMs: 10)
        readEverything(s)
        _ = try? s.heartbeat(at: 1)
    } catch {
        _ = "\(error)"  // the message a person reads
    }
    return 0
}
