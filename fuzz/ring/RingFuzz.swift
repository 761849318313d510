// libFuzzer harness: arbitrary bytes as a live-ring file. Attaching must either throw a RingError
// or give a consumer whose read/wait never crash, whatever head, tail and geometry say.
// Built together with Sources/LiveFeed (same module, so internals are reachable); see README.md.
#if canImport(Glibc)
import Glibc
#endif

nonisolated(unsafe) var fuzzPath: String = ""

@_cdecl("LLVMFuzzerTestOneInput")
public func ringFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    if fuzzPath.isEmpty { fuzzPath = "/dev/shm/ringfuzz-\(getpid()).ring" }
    let fd = open(fuzzPath, O_RDWR | O_CREAT | O_TRUNC, 0o600)
    guard fd >= 0 else { return 0 }
    _ = write(fd, data, size)
    close(fd)
    if let consumer = try? RingConsumer(path: fuzzPath) {
        var buffer = [LiveRecord](repeating: LiveRecord(), count: 64)
        for _ in 0..<4 {
            _ = buffer.withUnsafeMutableBufferPointer { consumer.read(into: $0) }
        }
        _ = consumer.wait(timeoutNanoseconds: 0, pollNanoseconds: 0, spin: 1)
        _ = consumer.dropped
        _ = consumer.available
    }
    return 0
}
