import Core
import Foundation
import Testing
@testable import Capture

/// Capture files damaged on disk (found by fuzz/pcap): read without trapping.
@Suite struct CaptureDamagedFileTests {
    /// A nanosecond raw-IP pcap with one record whose header fields are `seconds`/`fraction`.
    static func pcap(seconds: UInt32, fraction: UInt32, packet: [UInt8]) -> Data {
        var d = Data()
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { d.append(contentsOf: $0) } }
        func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { d.append(contentsOf: $0) } }
        u32(0xA1B2_3C4D); u16(2); u16(4); u32(0); u32(0); u32(262_144); u32(101)
        u32(seconds); u32(fraction); u32(UInt32(packet.count)); u32(UInt32(packet.count))
        d.append(contentsOf: packet)
        return d
    }

    /// libpcap reads a record's time fields as signed 32-bit: 0x81009b00 is negative. That used
    /// to trap ("Negative value is not representable") in `timestampNanoseconds`; it reads as 0.
    @Test func aRecordWithANegativeTimeReadsAsTimeZero() throws {
        let dir = TemporaryDirectory()
        let packet = ipv4Packet(protocol: 6, source: 0x0A63_0002, destination: 0xC0A8_0105, sourcePort: 40000,
                                destinationPort: 443, payload: 0)
        let path = dir.file("capture-000001.pcap")
        try Self.pcap(seconds: 0x8100_9B00, fraction: 0x8000_0001, packet: packet).write(to: URL(fileURLWithPath: path))
        let file = CaptureFileInfo(sequence: 1, path: path, size: 0, modifiedNanoseconds: 0)
        var times: [UInt64] = []
        try CaptureReader.forEachPacket(in: file) { _, time, length, _ in
            times.append(time)
            #expect(length == packet.count)
        }
        #expect(times == [0])
        let key = CaptureFlowKey(ipVersion: 4, ipProtocol: 6, aLow: 0x0A63_0002, aPort: 40000, bLow: 0xC0A8_0105, bPort: 443)
        let r = try CaptureReader.extract(files: [file], selection: .flow(key, from: nil, until: 1), outputPath: dir.file("out.pcap"))
        #expect(r.packets == 1)
    }
}
