import Core
import Engine
import Capture
import Foundation
import LiveFeed
import Packet
import Policy
import Testing

@testable import Daemon

/// The daemon's observer driven exactly as `GatewayEngine.decide` drives it (track the flow,
/// then `packet(...)` under one batch), checked against a real ring consumer and the pcap files.
@Suite struct ObserveTests {
    /// A throw-away directory.
    final class Directory {
        let path: String
        init(_ tag: String) throws {
            path = FileManager.default.temporaryDirectory
                .appendingPathComponent("tv-observe-\(tag)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    /// An IPv4 UDP (proto 17) or TCP (6) packet with a valid header checksum and `payload` bytes.
    static func ipv4(_ proto: UInt8, _ src: UInt32, _ sport: UInt16, _ dst: UInt32, _ dport: UInt16, payload: Int,
                     flags: UInt8 = 0x10) -> [UInt8] {
        func be16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }
        func be32(_ v: UInt32) -> [UInt8] { be16(UInt16(v >> 16)) + be16(UInt16(v & 0xFFFF)) }
        let body = (0..<payload).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(sport)) }
        let transport = proto == 6
            ? be16(sport) + be16(dport) + be32(1) + be32(0) + [0x50, flags] + be16(65535) + [0, 0, 0, 0] + body
            : be16(sport) + be16(dport) + be16(UInt16(8 + body.count)) + [0, 0] + body
        var h: [UInt8] = [0x45, 0] + be16(UInt16(20 + transport.count)) + [0, 1, 0x40, 0, 64, proto, 0, 0] + be32(src) + be32(dst)
        var sum: UInt32 = 0
        for i in stride(from: 0, to: 20, by: 2) { sum += UInt32(h[i]) << 8 | UInt32(h[i + 1]) }
        while sum > 0xFFFF { sum = (sum & 0xFFFF) + (sum >> 16) }
        h[10] = UInt8(~sum >> 8 & 0xFF)
        h[11] = UInt8(~sum & 0xFF)
        return h + transport
    }

    static let client: UInt32 = 0x0A63_0002  // 10.99.0.2
    static let server: UInt32 = 0x0A01_0001  // 10.1.0.1

    /// What `decide` does around the observer for one packet.
    static func drive(_ o: PacketObserver, _ table: FlowTable, _ bytes: [UInt8], fromPeer: Bool,
                      action: Verdict = .allow, peer: UInt32 = 1, nowMs: Int64 = 1000) throws {
        try bytes.withUnsafeBytes { raw in
            let p = try PacketParser.parse(raw)
            let (key, reversed) = p.flowKey
            let t = table.track(key, reversed: reversed, length: raw.count, tcpFlags: p.tcpFlags, now: nowMs)
            o.packet(ObservedBytes(raw), p, handle: t.handle, entry: table[t.handle], opened: t.opened, action: action,
                     peer: peer, fromPeer: fromPeer)
        }
    }

    /// Flow A (UDP, 3 packets out, 1 back), flow B (TCP, 2 packets, blocked), in one batch.
    static func traffic() -> [(bytes: [UInt8], fromPeer: Bool, action: Verdict)] {
        [
            (ipv4(17, client, 40_000, server, 53, payload: 100), true, .allow),
            (ipv4(17, client, 40_000, server, 53, payload: 1400), true, .allow),
            (ipv4(17, server, 53, client, 40_000, payload: 300), false, .allow),
            (ipv4(6, client, 41_000, server, 25, payload: 0, flags: 0x02), true, .block),
            (ipv4(17, client, 40_000, server, 53, payload: 10), true, .allow),
            (ipv4(6, client, 41_000, server, 25, payload: 0, flags: 0x02), true, .block),
        ]
    }

    @Test func nothingHappensWhenNobodyWatchesAndCaptureIsOff() throws {
        let dir = try Directory("idle")
        let ring = try RingProducer(directory: dir.path, slotCount: 64)
        let capture = try CaptureSpooler(directory: dir.path + "/capture", enabled: false)
        let o = PacketObserver(ring: ring, capture: capture, flowCapacity: 64, peers: PeerRegistry())
        let table = FlowTable(capacity: 64)
        o.beginBatch()
        for t in Self.traffic() { try Self.drive(o, table, t.bytes, fromPeer: t.fromPeer, action: t.action) }
        o.endBatch()
        #expect(ring.published == 0)
        #expect(capture.packetsWritten == 0)
        #expect(try CaptureFiles.list(directory: capture.directory).isEmpty)
    }

    @Test func recordsCarryPacketsFlowEventsAndCaptureLocations() throws {
        let dir = try Directory("rec")
        let ring = try RingProducer(directory: dir.path, slotCount: 256)
        let consumer = try RingConsumer(path: ring.path)
        let capture = try CaptureSpooler(directory: dir.path + "/capture", detail: .full, enabled: true)
        let o = PacketObserver(ring: ring, capture: capture, flowCapacity: 64, peers: .names([1: "alice"]))
        let table = FlowTable(capacity: 64)
        let traffic = Self.traffic()
        o.beginBatch()
        for t in traffic { try Self.drive(o, table, t.bytes, fromPeer: t.fromPeer, action: t.action) }
        o.endBatch()
        o.close()  // flushes the capture and the flow index

        let records = consumer.read()
        #expect(records.map(\.kind) == [.flowOpen, .packet, .packet, .packet, .flowOpen, .packet, .packet, .packet])
        let packets = records.filter { $0.kind == .packet }
        #expect(packets.map(\.length) == traffic.map { UInt32($0.bytes.count) })
        #expect(packets.map(\.verdict) == traffic.map { Optional($0.action) })
        #expect(packets.map(\.direction) == traffic.map { $0.fromPeer ? Direction.out : .in })
        #expect(records.allSatisfy { $0.peerName.description == "alice" && $0.peerIndex == 1 })
        #expect(packets[0].flowID == packets[1].flowID && packets[0].flowID == packets[2].flowID)
        #expect(packets[3].flowID != packets[0].flowID && packets[3].tcpFlags == 0x02)
        #expect(packets[2].sourcePort == 53 && packets[2].destinationLow == UInt64(Self.client))

        // Every packet record points at its own bytes in the capture.
        let files = try CaptureFiles.list(directory: capture.directory)
        try #require(files.count == 1)
        var stored: [CaptureLocation: [UInt8]] = [:]
        try CaptureReader.forEachPacket(in: files[0]) { location, _, _, bytes in stored[location] = Array(bytes) }
        #expect(stored.count == traffic.count)
        for (r, t) in zip(packets, traffic) {
            #expect(r.captureOffset != 0)
            #expect(stored[CaptureLocation(fileSequence: r.captureFileSequence, offset: r.captureOffset)] == t.bytes)
        }

        // The flow index names both flows with the originator first and their first packet.
        let index = CaptureFlowIndex.read(directory: capture.directory, sequence: files[0].sequence)
        #expect(index.map(\.flowID) == [packets[0].flowID, packets[3].flowID])
        #expect(index[0].location.offset == packets[0].captureOffset && index[1].location.offset == packets[3].captureOffset)
        #expect(index[0].key.aLow == UInt64(Self.client) && index[0].key.aPort == 40_000 && index[0].key.bPort == 53)
        #expect(o.firstCaptureLocation(flowID: packets[0].flowID)?.offset == packets[0].captureOffset)

        // Extracting flow A by its index entry gives exactly its four packets.
        let out = dir.path + "/a.pcap"
        let a = index[0]
        let result = try CaptureReader.extract(files: files, selection: .flow(a.key, from: a.location, until: nil),
                                               outputPath: out)
        #expect(result.packets == 4)
        let found = try #require(try CaptureFlowIndex.find(flowID: a.flowID, directory: capture.directory))
        #expect(found == a)
    }

    /// An IPv4 ICMP echo request (type 8) or reply (0) with identifier `id`.
    static func ping(_ src: UInt32, _ dst: UInt32, type: UInt8, id: UInt16, seq: UInt16) -> [UInt8] {
        func be16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }
        func be32(_ v: UInt32) -> [UInt8] { be16(UInt16(v >> 16)) + be16(UInt16(v & 0xFFFF)) }
        let icmp: [UInt8] = [type, 0, 0, 0] + be16(id) + be16(seq) + [UInt8](repeating: 0x5A, count: 56)
        return [0x45, 0] + be16(UInt16(20 + icmp.count)) + [0, 1, 0x40, 0, 64, 1, 0, 0] + be32(src) + be32(dst) + icmp
    }

    /// An ICMP flow's key in the capture index matches its packets in the capture file: extract
    /// by the index entry finds the pings and replies of that identifier, and nothing else.
    @Test func icmpFlowIsExtractedByItsIndexEntry() throws {
        let dir = try Directory("icmp")
        let capture = try CaptureSpooler(directory: dir.path + "/capture", detail: .full, enabled: true)
        let o = PacketObserver(ring: nil, capture: capture, flowCapacity: 64, peers: PeerRegistry())
        let table = FlowTable(capacity: 64)
        o.beginBatch()
        for seq: UInt16 in 1...3 {
            try Self.drive(o, table, Self.ping(Self.client, Self.server, type: 8, id: 0x77, seq: seq), fromPeer: true)
            try Self.drive(o, table, Self.ping(Self.server, Self.client, type: 0, id: 0x77, seq: seq), fromPeer: false)
            try Self.drive(o, table, Self.ping(Self.client, Self.server, type: 8, id: 0x78, seq: seq), fromPeer: true)
        }
        o.close()
        let files = try CaptureFiles.list(directory: capture.directory)
        let index = CaptureFlowIndex.read(directory: capture.directory, sequence: try #require(files.first).sequence)
        try #require(index.count == 2)
        for (entry, expected) in zip(index, [6, 3]) {
            #expect(entry.key.aLow == UInt64(Self.client) && entry.key.ipProtocol == 1)
            let result = try CaptureReader.extract(files: files, selection: .flow(entry.key, from: entry.location, until: nil),
                                                   outputPath: dir.path + "/flow-\(entry.flowID).pcap")
            #expect(result.packets == expected, "flow \(entry.flowID) \(entry.key)")
        }
    }

    @Test func flowCloseCarriesTotalsAndQueuedEventsArePublished() throws {
        let dir = try Directory("close")
        let ring = try RingProducer(directory: dir.path, slotCount: 64)
        let consumer = try RingConsumer(path: ring.path)
        let o = PacketObserver(ring: ring, capture: nil, flowCapacity: 64, peers: .names([2: "bob"]))
        let table = FlowTable(capacity: 64)
        o.beginBatch()
        for t in Self.traffic().prefix(3) { try Self.drive(o, table, t.bytes, fromPeer: t.fromPeer, peer: 2) }
        o.endBatch()
        o.noteRefusal(peer: 2, reason: 4)
        o.noteHandshake(peer: 2)
        var ended: [FlowRecord] = []
        table.expire(now: 10_000_000, budget: 64) { ended.append($0) }
        try #require(ended.count == 1)
        o.tick()
        o.flowEnded(ended[0], peer: 2)
        o.endBatch()
        let records = consumer.read()
        #expect(records.map(\.kind) == [.flowOpen, .packet, .packet, .packet, .refusal, .handshake, .flowClose])
        let close = records.last!
        #expect(close.detail == UInt64(Self.traffic().prefix(3).reduce(0) { $0 + $1.bytes.count }))
        #expect(close.detail2 == 3)
        #expect(close.sourcePort == 40_000 && close.peerName.description == "bob")
        #expect(records[4].detail == 4)
    }

    @Test func settingsChangesApplyAtTheNextTick() throws {
        let dir = try Directory("settings")
        let capture = try CaptureSpooler(directory: dir.path + "/capture", detail: .full, enabled: false)
        let o = PacketObserver(ring: nil, capture: capture, flowCapacity: 64, peers: PeerRegistry())
        let table = FlowTable(capacity: 64)
        let big = Self.ipv4(17, Self.client, 40_000, Self.server, 53, payload: 1000)
        o.requestCapture(CaptureSettingsChange(enabled: true, detail: .metadata))
        o.beginBatch()
        try Self.drive(o, table, big, fromPeer: true)
        #expect(capture.packetsWritten == 0)  // not applied before the tick
        o.tick()
        o.beginBatch()
        try Self.drive(o, table, big, fromPeer: true)
        #expect(capture.packetsWritten == 1 && capture.detail == .metadata)
        #expect(o.captureSequenceInUse == capture.currentSequence)
        o.requestCapture(CaptureSettingsChange(enabled: false, detail: .metadata))
        o.tick()
        o.beginBatch()
        try Self.drive(o, table, big, fromPeer: true)
        #expect(capture.packetsWritten == 1 && o.captureSequenceInUse == nil)
        // On again: the flow's first packet in the new file is noted again.
        o.requestCapture(CaptureSettingsChange(enabled: true, detail: .full))
        o.tick()
        o.beginBatch()
        try Self.drive(o, table, big, fromPeer: true)
        o.close()
        let files = try CaptureFiles.list(directory: capture.directory, scan: true)
        #expect(files.map(\.packetCount) == [1, 1])
        #expect(files.map { CaptureFlowIndex.read(directory: capture.directory, sequence: $0.sequence).count } == [1, 1])
    }

    @Test func pruneRemovesOldFilesWithTheirIndexesButKeepsTheActiveFile() throws {
        let dir = try Directory("prune")
        let capture = try CaptureSpooler(directory: dir.path + "/capture", detail: .full, maxFileBytes: 4096, enabled: true)
        let o = PacketObserver(ring: nil, capture: capture, flowCapacity: 64, peers: PeerRegistry())
        let table = FlowTable(capacity: 64)
        o.beginBatch()
        for port in 0..<12 {  // ~1.5 kB each: a new file every two flows
            try Self.drive(o, table, Self.ipv4(17, Self.client, UInt16(30_000 + port), Self.server, 53, payload: 1400),
                           fromPeer: true)
        }
        o.tick()
        capture.sync()
        let before = try CaptureFiles.list(directory: capture.directory)
        #expect(before.count >= 5)
        let result = try o.pruneCaptures(CapturePruneRequest(olderThan: nil, maxTotalBytes: 1, dryRun: false))
        let after = try CaptureFiles.list(directory: capture.directory)
        #expect(after.map(\.sequence) == [capture.currentSequence!])
        #expect(result.files == before.count - 1)
        let names = try FileManager.default.contentsOfDirectory(atPath: capture.directory).sorted()
        let seq = String(format: "%06d", capture.currentSequence!)
        #expect(names == ["capture-\(seq).flows", "capture-\(seq).pcap"])
    }
}
