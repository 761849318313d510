// libFuzzer harness for the capture flow index (Sources/Capture/CaptureFlowIndex.swift): the
// input is a `capture-000001.flows` file next to an (empty) `capture-000001.pcap`; it is read
// back and searched as `tunnelctl capture extract --flow ID` does. Any crash is a bug: a torn
// or hostile index must give entries or none, never a trap. Build and run with
// fuzz/flowindex/run.sh.
import Capture
import Core
import Glibc

let workDirectory: String = {
    var template = Array("/tmp/tv-fuzz-flows.XXXXXX".utf8CString)
    let dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    fclose(fopen(dir + "/capture-000001.pcap", "we"))
    return dir
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let path = workDirectory + "/" + CaptureFlowIndex.fileName(sequence: 1)
    guard let f = fopen(path, "we") else { fatalError("cannot write \(path)") }
    if size > 0 { _ = fwrite(data, 1, size, f) }
    fclose(f)
    let entries = CaptureFlowIndex.read(directory: workDirectory, sequence: 1)
    precondition(entries.count == size / CaptureFlowIndex.entrySize, "a trailing partial entry is ignored, whole ones are read")
    for e in entries.prefix(8) {
        // What extract does with an entry: a key and a place to start reading.
        _ = CaptureFlowKey(ipVersion: e.key.ipVersion, ipProtocol: e.key.ipProtocol, aHigh: e.key.aHigh, aLow: e.key.aLow,
                           aPort: e.key.aPort, bHigh: e.key.bHigh, bLow: e.key.bLow, bPort: e.key.bPort)
        _ = e.location.fileSequence
        let found = try? CaptureFlowIndex.find(flowID: e.flowID, directory: workDirectory)
        precondition(found?.flowID == e.flowID)
    }
    _ = try? CaptureFlowIndex.find(flowID: 0xdead_beef, directory: workDirectory)
    return 0
}
