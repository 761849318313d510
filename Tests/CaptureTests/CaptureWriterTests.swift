import Core
import CPcap
import Foundation
import Testing
@testable import Capture

@Suite struct CaptureWriterTests {
    /// Writes `packets` one every millisecond from a fixed epoch time.
    private func write(_ packets: [[UInt8]], to writer: CaptureWriter, start: UInt64 = 1_700_000_000_000_000_000) -> [Written] {
        packets.enumerated().map { i, bytes in
            let time = start + UInt64(i) * 1_000_000 + UInt64(i % 7)
            let location = writer.write(packet: bytes, timestampNanoseconds: time)
            return Written(bytes: bytes, time: time, location: location ?? CaptureLocation(fileSequence: 0, offset: 0))
        }
    }

    @Test func rotatesBySizeAndEveryRecordReadsBackAtItsLocation() throws {
        let dir = TemporaryDirectory()
        let writer = try CaptureWriter(directory: dir.path, detail: .full, maxFileBytes: 16 * 1024)
        let written = write(trafficMix(count: 300), to: writer)
        writer.close()
        let files = try CaptureFiles.list(directory: dir.path, scan: true)
        #expect(files.count > 5)
        #expect(files.map(\.sequence) == Array(1...UInt32(files.count)))
        #expect(files.allSatisfy { $0.size <= 16 * 1024 })
        #expect(files.map { $0.packetCount ?? -1 }.reduce(0, +) == 300)
        // Every record, in order, across every rotation boundary, with its bytes and time.
        var read: [(bytes: [UInt8], length: Int, time: UInt64)] = []
        for file in files { read += try readAll(file.path) }
        #expect(read.count == written.count)
        for (r, w) in zip(read, written) {
            #expect(r.bytes == w.bytes && r.length == w.bytes.count && r.time == w.time)
        }
        // Locations: sequences are those of the files, offsets are where the records start.
        var located: [CaptureLocation] = []
        for file in files {
            try CaptureReader.forEachPacket(in: file) { location, _, _, _ in located.append(location) }
        }
        #expect(located == written.map(\.location))
        #expect(written.first?.location == CaptureLocation(fileSequence: 1, offset: 24))
        #expect(files.first?.firstPacketNanoseconds == written.first?.time)
        #expect(files.last?.lastPacketNanoseconds == written.last?.time)
    }

    @Test func extractAtLocationsReturnsExactlyThosePackets() throws {
        let dir = TemporaryDirectory()
        let writer = try CaptureWriter(directory: dir.path, maxFileBytes: 8 * 1024)
        let written = write(trafficMix(count: 120), to: writer)
        writer.close()
        let files = try CaptureFiles.list(directory: dir.path)
        // The records on both sides of every rotation boundary, plus a few in the middle.
        var picked: [Written] = []
        for (a, b) in zip(written, written.dropFirst()) where a.location.fileSequence != b.location.fileSequence {
            picked += [a, b]
        }
        picked += [written[0], written[60]]
        picked.sort { $0.location < $1.location }
        let out = dir.file("picked.pcap")
        let result = try CaptureReader.extract(files: files, selection: .locations(picked.map(\.location)), outputPath: out)
        #expect(result.packets == picked.count)
        #expect(try readAll(out).map(\.bytes) == picked.map(\.bytes))
    }

    @Test func tcpdumpReadsEveryFile() throws {
        guard tcpdumpPath != nil else { return }  // Debian's tcpdump is in scripts/deps.sh; absent elsewhere
        let dir = TemporaryDirectory()
        let writer = try CaptureWriter(directory: dir.path, maxFileBytes: 10 * 1024)
        _ = write(trafficMix(count: 100), to: writer)
        writer.close()
        let files = try CaptureFiles.list(directory: dir.path, scan: true)
        #expect(files.count > 1)
        var total = 0
        for file in files {
            let (count, status) = try tcpdumpCount(file.path)
            #expect(status == 0)
            #expect(count == file.packetCount)
            total += count
        }
        #expect(total == 100)
    }

    @Test func detailChangeRotatesAndSetsSnaplen() throws {
        let dir = TemporaryDirectory()
        let writer = try CaptureWriter(directory: dir.path, detail: .full)
        let big = ipv4Packet(protocol: 6, source: 1, destination: 2, sourcePort: 3, destinationPort: 4, payload: 1400)
        let first = writer.write(packet: big, timestampNanoseconds: 1_000_000_000)
        writer.setDetail(.full)  // no change: same file
        let second = writer.write(packet: big, timestampNanoseconds: 2_000_000_000)
        writer.setDetail(.metadata)
        let third = writer.write(packet: big, timestampNanoseconds: 3_000_000_000)
        writer.close()
        #expect(first?.fileSequence == 1 && second?.fileSequence == 1)
        #expect(third == CaptureLocation(fileSequence: 2, offset: 24))
        let files = try CaptureFiles.list(directory: dir.path)
        let full = try PcapInput(path: files[0].path)
        let metadata = try PcapInput(path: files[1].path)
        #expect(full.snaplen == 262_144 && metadata.snaplen == 128)
        #expect(full.linkType == DLT_RAW)
        let packets = try readAll(files[1].path)
        #expect(packets.count == 1)
        #expect(packets[0].bytes == Array(big.prefix(128)))
        #expect(packets[0].length == big.count)
    }

    @Test func disabledWriterWritesNothingAndReEnablingStartsANewFile() throws {
        let dir = TemporaryDirectory()
        let writer = try CaptureWriter(directory: dir.path, enabled: false)
        let packet = ipv4Packet(protocol: 17, source: 1, destination: 2, sourcePort: 3, destinationPort: 4, payload: 10)
        #expect(writer.write(packet: packet, timestampNanoseconds: 1) == nil)
        #expect(try CaptureFiles.list(directory: dir.path).isEmpty)
        writer.setEnabled(true)
        #expect(writer.write(packet: packet, timestampNanoseconds: 2)?.fileSequence == 1)
        #expect(writer.currentSequence == 1)
        writer.setEnabled(false)
        #expect(writer.currentSequence == nil)
        #expect(writer.write(packet: packet, timestampNanoseconds: 3) == nil)
        writer.setEnabled(true)
        #expect(writer.write(packet: packet, timestampNanoseconds: 4)?.fileSequence == 2)
        writer.close()
        #expect(try CaptureFiles.list(directory: dir.path, scan: true).map { $0.packetCount } == [1, 1])
    }

    @Test func sequenceContinuesAfterARestart() throws {
        let dir = TemporaryDirectory()
        let packet = ipv4Packet(protocol: 17, source: 1, destination: 2, sourcePort: 3, destinationPort: 4, payload: 10)
        do {
            let writer = try CaptureWriter(directory: dir.path)
            writer.write(packet: packet, timestampNanoseconds: 1)
        }
        let again = try CaptureWriter(directory: dir.path)
        #expect(again.write(packet: packet, timestampNanoseconds: 2)?.fileSequence == 2)
    }

    @Test func flushesByPacketTimeNotPerPacket() throws {
        let dir = TemporaryDirectory()
        let writer = try CaptureWriter(directory: dir.path, flushIntervalNanoseconds: 1_000_000_000)
        let packet = ipv4Packet(protocol: 17, source: 1, destination: 2, sourcePort: 3, destinationPort: 4, payload: 50)
        func size() -> Int { (try? FileManager.default.attributesOfItem(atPath: dir.file("capture-000001.pcap"))[.size] as? Int) ?? -1 }
        writer.write(packet: packet, timestampNanoseconds: 10_000_000_000)
        writer.write(packet: packet, timestampNanoseconds: 10_500_000_000)
        #expect(size() == 0)  // header and records still in the stdio buffer
        writer.write(packet: packet, timestampNanoseconds: 11_000_000_000)
        #expect(size() == 24 + 3 * (16 + packet.count))
        writer.flush()
        writer.close()
    }

    @Test func unwritableDirectoryIsCountedNotFatal() throws {
        let dir = TemporaryDirectory()
        let writer = try CaptureWriter(directory: dir.file("sub"))
        try FileManager.default.removeItem(atPath: dir.file("sub"))
        let packet = ipv4Packet(protocol: 17, source: 1, destination: 2, sourcePort: 3, destinationPort: 4, payload: 5)
        #expect(writer.write(packet: packet, timestampNanoseconds: 1) == nil)
        #expect(writer.failures == 1)
        guard case .cannotOpen(let path, _) = writer.lastError else {
            Issue.record("expected cannotOpen, got \(String(describing: writer.lastError))")
            return
        }
        #expect(path.hasSuffix("capture-000001.pcap"))
    }
}
