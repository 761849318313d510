import Core
import Foundation
import Testing
@testable import Capture

@Suite struct CaptureExtractTests {
    /// 240 packets of the traffic mix in rotated files; returns the directory and what was written.
    private func capture(_ dir: TemporaryDirectory, count: Int = 240) throws -> [Written] {
        let writer = try CaptureWriter(directory: dir.path, maxFileBytes: 12 * 1024)
        let written = trafficMix(count: count).enumerated().map { i, bytes in
            let time = 1_700_000_000_000_000_000 + UInt64(i) * 1_000_000
            return Written(bytes: bytes, time: time, location: writer.write(packet: bytes, timestampNanoseconds: time)!)
        }
        writer.close()
        return written
    }

    private let https = CaptureFlowKey(ipVersion: 4, ipProtocol: 6, aLow: 0x0A63_0002, aPort: 40000, bLow: 0xC0A8_0105, bPort: 443)

    /// The slow reference: which written packets belong to `key`.
    private func reference(_ written: [Written], _ key: CaptureFlowKey) -> [[UInt8]] {
        written.filter { w in w.bytes.withUnsafeBytes { CapturePacketSummary(packet: $0).map(key.matches) ?? false } }.map(\.bytes)
    }

    @Test func flowExtractContainsExactlyThatFlowBothWays() throws {
        let dir = TemporaryDirectory()
        let written = try capture(dir)
        let files = try CaptureFiles.list(directory: dir.path)
        #expect(files.count > 3)
        let out = dir.file("flow.pcap")
        let result = try CaptureReader.extract(files: files, selection: .flow(https, from: nil, until: nil), outputPath: out)
        let expected = reference(written, https)
        #expect(expected.count == 80)  // both directions of the 40000<->443 flow
        #expect(result.packets == expected.count)
        #expect(try readAll(out).map(\.bytes) == expected)
        if tcpdumpPath != nil { #expect(try tcpdumpCount(out) == (80, 0)) }
    }

    @Test func flowExtractFromItsFirstLocationReadsLessAndFindsTheSame() throws {
        let dir = TemporaryDirectory()
        let written = try capture(dir)
        let files = try CaptureFiles.list(directory: dir.path)
        let ssh = CaptureFlowKey(ipVersion: 4, ipProtocol: 6, aLow: 0x0A63_0003, aPort: 40001, bLow: 0xC0A8_0105, bPort: 22)
        // Pretend the flow table saw its first packet at index 100.
        let first = written[100...].first { w in w.bytes.withUnsafeBytes { CapturePacketSummary(packet: $0).map(ssh.matches) ?? false } }!
        let until = written[200].time
        let out = dir.file("ssh.pcap")
        let result = try CaptureReader.extract(files: files, selection: .flow(ssh, from: first.location, until: until), outputPath: out)
        let expected = reference(written.filter { $0.location >= first.location && $0.time <= until }, ssh)
        #expect(result.packets == expected.count && expected.count > 10)
        #expect(try readAll(out).map(\.bytes) == expected)
        #expect(result.filesRead < files.count)
    }

    @Test func bpfFilterAloneAndWithAFlow() throws {
        let dir = TemporaryDirectory()
        let written = try capture(dir)
        let files = try CaptureFiles.list(directory: dir.path)
        func summaries(_ w: Written) -> CapturePacketSummary { w.bytes.withUnsafeBytes { CapturePacketSummary(packet: $0)! } }

        let udp = dir.file("udp.pcap")
        let r1 = try CaptureReader.extract(files: files, selection: .all, bpfFilter: "udp", outputPath: udp)
        let expectedUDP = written.filter { summaries($0).ipProtocol == 17 }.map(\.bytes)
        #expect(r1.packets == expectedUDP.count && expectedUDP.count == 80)
        #expect(try readAll(udp).map(\.bytes) == expectedUDP)

        let port443 = dir.file("443.pcap")
        let r2 = try CaptureReader.extract(files: files, selection: .all, bpfFilter: "ip and tcp port 443", outputPath: port443)
        let expected443 = written.filter { s in let s = summaries(s); return s.ipVersion == 4 && s.ipProtocol == 6 && (s.sourcePort == 443 || s.destinationPort == 443) }.map(\.bytes)
        #expect(r2.packets == expected443.count && expected443.count == 120)
        #expect(try readAll(port443).map(\.bytes) == expected443)

        // Flow and filter together: only the flow's packets going to 443.
        let both = dir.file("both.pcap")
        let r3 = try CaptureReader.extract(files: files, selection: .flow(https, from: nil, until: nil),
                                           bpfFilter: "dst port 443", outputPath: both)
        let expectedBoth = written.filter { s in let s = summaries(s); return https.matches(s) && s.destinationPort == 443 }.map(\.bytes)
        #expect(r3.packets == expectedBoth.count && expectedBoth.count == 40)
        #expect(try readAll(both).map(\.bytes) == expectedBoth)

        let all = dir.file("all.pcap")
        #expect(try CaptureReader.extract(files: files, selection: .all, outputPath: all).packets == 240)
    }

    @Test func badFilterIsATypedError() throws {
        let dir = TemporaryDirectory()
        _ = try capture(dir, count: 6)
        let files = try CaptureFiles.list(directory: dir.path)
        #expect {
            try CaptureReader.extract(files: files, selection: .all, bpfFilter: "tcp port banana", outputPath: dir.file("x.pcap"))
        } throws: { error in
            guard case .badFilter(let expression, let message) = error as? CaptureError else { return false }
            return expression == "tcp port banana" && !message.isEmpty
        }
    }

    @Test func nonPcapInputIsACleanError() throws {
        let dir = TemporaryDirectory()
        let bogus = dir.file("capture-000001.pcap")
        try Data("definitely not a pcap file".utf8).write(to: URL(fileURLWithPath: bogus))
        let files = try CaptureFiles.list(directory: dir.path)
        #expect(throws: CaptureError.self) {
            try CaptureReader.extract(files: files, selection: .all, outputPath: dir.file("x.pcap"))
        }
        // Listing with a scan still lists it, without counts.
        let scanned = try CaptureFiles.list(directory: dir.path, scan: true)
        #expect(scanned.count == 1 && scanned[0].packetCount == nil)
    }
}
