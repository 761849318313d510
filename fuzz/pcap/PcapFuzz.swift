// libFuzzer harness for the capture-file reader (Sources/Capture: PcapInput, CaptureReader,
// CapturePacketSummary): the input is written to a file and read as a capture file would be
// by `tunnelctl capture list --scan` and `capture extract` (every packet, a flow selection from
// a location the input picks, a list of locations, a BPF filter). Any crash is a bug: a
// damaged or hostile pcap file must give a `CaptureError` or fewer packets, never a trap.
// Build and run with fuzz/pcap/run.sh.
import Capture
import Core
import Glibc

let workDirectory: String = {
    var template = Array("/tmp/tv-fuzz-pcap.XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
}()
let inputPath = workDirectory + "/capture-000001.pcap"

/// Writes `size` bytes to `path` (truncating).
func writeFile(_ path: String, _ data: UnsafePointer<UInt8>, _ size: Int) {
    guard let f = fopen(path, "we") else { fatalError("cannot write \(path)") }
    if size > 0 { _ = fwrite(data, 1, size, f) }
    fclose(f)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    writeFile(inputPath, data, size)
    let file = CaptureFileInfo(sequence: 1, path: inputPath, size: size, modifiedNanoseconds: 0)
    var first: CapturePacketSummary?
    var offsets: [UInt64] = []
    _ = try? CaptureReader.forEachPacket(in: file) { location, _, length, bytes in
        precondition(length >= 0)
        offsets.append(location.offset)
        if let s = CapturePacketSummary(packet: bytes), first == nil { first = s }
    }
    // An offset the input chooses (its last byte), as a damaged store row could give.
    let pick = size == 0 ? 0 : UInt64(data[size - 1]) &* 13 % UInt64(size + 64)
    _ = try? CaptureReader.extract(files: [file], selection: .all, outputPath: "/dev/null")
    _ = try? CaptureReader.extract(files: [file], selection: .all, bpfFilter: "tcp or udp port 53", outputPath: "/dev/null")
    if let first {
        let key = CaptureFlowKey(first)
        _ = try? CaptureReader.extract(files: [file], selection: .flow(key, from: CaptureLocation(fileSequence: 1, offset: pick), until: nil),
                                       outputPath: "/dev/null")
    }
    let locations = (offsets.prefix(4) + [pick]).map { CaptureLocation(fileSequence: 1, offset: $0) }
    _ = try? CaptureReader.extract(files: [file], selection: .locations(locations), outputPath: "/dev/null")
    return 0
}
