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
    if size > 2, data[0] & 1 == 1 {
        // Half the inputs get a valid geometry so the fuzzer reaches head/tail and the slots;
        // the rest of the input overwrites everything after the geometry fields.
        let slotCount = 2 << Int(data[1] % 6)
        var file = [UInt8](repeating: 0, count: RingLayout.fileSize(slotCount: slotCount))
        func put(_ o: Int, _ v: UInt32) { for i in 0..<4 { file[o + i] = UInt8(truncatingIfNeeded: v >> (8 * i)) } }
        put(0, RingLayout.magic); put(4, 1); put(8, 256); put(12, 128); put(16, UInt32(slotCount))
        for i in 2..<size where 20 + i - 2 < file.count { file[20 + i - 2] = data[i] }
        _ = file.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    } else {
        _ = write(fd, data, size)
    }
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
