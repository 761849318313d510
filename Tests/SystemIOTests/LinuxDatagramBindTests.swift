import Core
import Glibc
import Packet
import Runtime
import Testing

@testable import SystemIO

/// Two real binds on loopback exchanging batches through recvmmsg/sendmmsg (no root needed).
@Suite struct LinuxDatagramBindTests {
    static let v4Loopback = IPAddress(v4: 0x7F00_0001)
    static let v6Loopback = IPAddress(v6High: 0, low: 1)

    /// Binds on both loopbacks with an ephemeral port; IPv6 may be missing on odd hosts.
    func loopbackBind() throws -> LinuxDatagramBind {
        try LinuxDatagramBind(port: 0, bufferBytes: 1 << 20, ipv4: Self.v4Loopback, ipv6: Self.v6Loopback)
    }

    /// Receives until `count` datagrams arrived (or 5 s passed), appending (source, bytes).
    func receive(_ bind: LinuxDatagramBind, count: Int, batch: PacketBatch) throws -> [(Endpoint, [UInt8])] {
        var got: [(Endpoint, [UInt8])] = []
        var waits = 0
        while got.count < count && waits < 500 {
            if try bind.waitReadable(timeoutMilliseconds: 10) != .readable { waits += 1; continue }
            let n = try bind.receive(into: batch)
            #expect(batch.count == n)
            for i in 0..<n { got.append((batch.endpoints[i], batch.bytes(i))) }
        }
        return got
    }

    @Test func ephemeralPortIsSharedByBothFamilies() throws {
        let bind = try loopbackBind()
        #expect(bind.port != 0)
        #expect(bind.ipv4Descriptor >= 0)
        #expect(bind.buffers.receive > 0 && bind.buffers.send > 0)
        if bind.ipv6Descriptor >= 0 {
            // The same port on IPv6: another bind on exactly that port must fail for both families.
            #expect(throws: SystemError.self) {
                _ = try LinuxDatagramBind(port: bind.port, ipv4: nil, ipv6: Self.v6Loopback)
            }
        }
        #expect(throws: SystemError.self) { _ = try LinuxDatagramBind(port: bind.port, ipv4: Self.v4Loopback, ipv6: nil) }
    }

    @Test func batchesBothWaysOverIPv4AndIPv6() throws {
        let a = try loopbackBind()
        let b = try loopbackBind()
        let families = a.ipv6Descriptor >= 0 && b.ipv6Descriptor >= 0 ? [Self.v4Loopback, Self.v6Loopback] : [Self.v4Loopback]
        let out = PacketBatch(capacity: 64, slotSize: 2048)
        let incoming = PacketBatch(capacity: 16, slotSize: 2048, headroom: 16)
        // 40 datagrams alternating families, each with distinct content and length.
        let total = 40
        for i in 0..<total {
            let family = families[i % families.count]
            let payload = (0..<(1 + i * 7)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) }
            out.set(i, bytes: payload, endpoint: Endpoint(address: family, port: b.port))
        }
        out.count = total
        #expect(try a.send(out, from: 0) == total)
        let got = try receive(b, count: total, batch: incoming)
        #expect(got.count == total)
        // Per family, order is kept; content and sources match.
        for family in families {
            let sent = (0..<total).filter { out.endpoints[$0].address == family }.map { out.bytes($0) }
            let received = got.filter { $0.0.address == family }
            #expect(received.map(\.1) == sent)
            #expect(received.allSatisfy { $0.0 == Endpoint(address: family, port: a.port) })
        }
        #expect(incoming.offsets[0] == 16)
        // And back: reply to each source from the received endpoints.
        let replies = PacketBatch(capacity: 64, slotSize: 2048)
        for (i, (source, bytes)) in got.enumerated() { replies.set(i, bytes: bytes.reversed(), endpoint: source) }
        replies.count = got.count
        #expect(try b.send(replies, from: 0) == got.count)
        let back = try receive(a, count: got.count, batch: incoming)
        #expect(Set(back.map { $0.1 }) == Set(got.map { Array($0.1.reversed()) }))
        #expect(back.allSatisfy { $0.0.port == b.port })
        #expect(a.truncatedReceives.load(ordering: .relaxed) == 0)
        #expect(a.failedSends.load(ordering: .relaxed) == 0)
    }

    @Test func oversizedDatagramsAreDroppedAndCountedAndTheRestCompacted() throws {
        let a = try loopbackBind()
        let b = try loopbackBind()
        let out = PacketBatch(capacity: 4, slotSize: 2048)
        out.set(0, bytes: [1, 1, 1], endpoint: Endpoint(address: Self.v4Loopback, port: b.port))
        out.set(1, bytes: [UInt8](repeating: 2, count: 1500), endpoint: Endpoint(address: Self.v4Loopback, port: b.port))
        out.set(2, bytes: [3, 3], endpoint: Endpoint(address: Self.v4Loopback, port: b.port))
        out.count = 3
        #expect(try a.send(out, from: 0) == 3)
        // Slots of 100 bytes: the 1500-byte datagram does not fit.
        let small = PacketBatch(capacity: 8, slotSize: 100)
        let got = try receive(b, count: 2, batch: small)
        #expect(got.map(\.1) == [[1, 1, 1], [3, 3]])
        #expect(b.truncatedReceives.load(ordering: .relaxed) == 1)
    }

    @Test func sendsToAMissingFamilyAreCountedNotThrown() throws {
        let v4only = try LinuxDatagramBind(port: 0, ipv4: Self.v4Loopback, ipv6: nil)
        let peer = try loopbackBind()
        let out = PacketBatch(capacity: 4, slotSize: 128)
        out.set(0, bytes: [1], endpoint: Endpoint(address: Self.v6Loopback, port: peer.port))
        out.set(1, bytes: [2], endpoint: Endpoint(address: Self.v4Loopback, port: peer.port))
        out.count = 2
        #expect(try v4only.send(out, from: 0) == 2)
        #expect(v4only.failedSends.load(ordering: .relaxed) == 1)
        #expect(v4only.lastSendErrno.load(ordering: .relaxed) == EAFNOSUPPORT)
        let got = try receive(peer, count: 1, batch: PacketBatch(capacity: 4, slotSize: 128))
        #expect(got.map(\.1) == [[2]])
    }

    @Test func closeWakesTheReceiverAndStopsIO() throws {
        let bind = try loopbackBind()
        #expect(try bind.waitReadable(timeoutMilliseconds: 0) == .timedOut)
        bind.close()
        bind.close()
        #expect(try bind.waitReadable(timeoutMilliseconds: -1) == .closed)
        #expect(try bind.receive(into: PacketBatch(capacity: 1, slotSize: 64)) == 0)
    }

    // MARK: UDP GSO

    @Test func segmentRunsGroupEqualSizedDatagramsToOneEndpoint() {
        let to = Endpoint(address: Self.v4Loopback, port: 9)
        let other = Endpoint(address: Self.v4Loopback, port: 10)
        let batch = PacketBatch(capacity: 200, slotSize: 2048)
        func fill(_ specs: [(Int, Endpoint)]) {
            for (i, (length, endpoint)) in specs.enumerated() {
                batch.set(i, bytes: [UInt8](repeating: UInt8(i & 0xFF), count: length), endpoint: endpoint)
            }
            batch.count = specs.count
        }
        // Equal sizes, then a shorter last one that ends the group.
        fill([(100, to), (100, to), (100, to), (60, to), (100, to)])
        #expect(LinuxDatagramBind.segmentRun(batch, from: 0) == 4)
        #expect(LinuxDatagramBind.segmentRun(batch, from: 4) == 1)
        // A longer datagram or another endpoint starts a new group.
        fill([(100, to), (120, to), (120, other), (120, other)])
        #expect(LinuxDatagramBind.segmentRun(batch, from: 0) == 1)
        #expect(LinuxDatagramBind.segmentRun(batch, from: 1) == 1)
        #expect(LinuxDatagramBind.segmentRun(batch, from: 2) == 2)
        // Empty datagrams (zero-length) are never segmented.
        fill([(0, to), (0, to)])
        #expect(LinuxDatagramBind.segmentRun(batch, from: 0) == 1)
        // At most 64 datagrams, and at most 65,000 bytes, per message.
        fill(Array(repeating: (100, to), count: 150))
        #expect(LinuxDatagramBind.segmentRun(batch, from: 0) == LinuxDatagramBind.maxSegments)
        fill(Array(repeating: (1452, to), count: 60))
        #expect(LinuxDatagramBind.segmentRun(batch, from: 0) == 65_000 / 1452)
    }

    /// The same batch sent with and without UDP GSO arrives as the same datagrams in the same order.
    @Test(arguments: [true, false]) func segmentedSendsArriveAsSeparateDatagrams(segmentation: Bool) throws {
        let a = try LinuxDatagramBind(port: 0, bufferBytes: 4 << 20, ipv4: Self.v4Loopback, ipv6: nil,
                                      segmentation: segmentation)
        let b = try loopbackBind()
        let c = try loopbackBind()
        let out = PacketBatch(capacity: 128, slotSize: 2048)
        var expectB: [[UInt8]] = []
        var expectC: [[UInt8]] = []
        // 70 full datagrams to b (two GSO messages), a short one, 5 to c, then 3 more to b.
        var specs: [(Int, LinuxDatagramBind)] = Array(repeating: (1452, b), count: 70)
        specs.append((700, b))
        specs += Array(repeating: (96, c), count: 5)
        specs += Array(repeating: (1452, b), count: 3)
        for (i, (length, to)) in specs.enumerated() {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ i) }
            out.set(i, bytes: bytes, endpoint: Endpoint(address: Self.v4Loopback, port: to.port))
            if to === b { expectB.append(bytes) } else { expectC.append(bytes) }
        }
        out.count = specs.count
        #expect(try a.send(out, from: 0) == specs.count)
        let incoming = PacketBatch(capacity: 64, slotSize: 2048)
        #expect(try receive(b, count: expectB.count, batch: incoming).map(\.1) == expectB)
        #expect(try receive(c, count: expectC.count, batch: incoming).map(\.1) == expectC)
        #expect(a.failedSends.load(ordering: .relaxed) == 0)
        #expect(a.segmentation == segmentation)  // loopback segments UDP: GSO stays on
    }

    /// UDP GRO on receive: a GSO send over loopback reaches a GRO socket as one coalesced message
    /// (the kernel keeps it whole), which the bind cuts back into the same datagrams in order —
    /// across receive calls when the batch is smaller than the message — with a receiver without
    /// GRO seeing the same datagrams the kernel segmented.
    @Test(arguments: [true, false]) func coalescedReceivesAreCutIntoTheSameDatagrams(gro: Bool) throws {
        let a = try LinuxDatagramBind(port: 0, bufferBytes: 4 << 20, ipv4: Self.v4Loopback, ipv6: nil)
        let b = try LinuxDatagramBind(port: 0, bufferBytes: 4 << 20, ipv4: Self.v4Loopback, ipv6: nil, segmentation: gro)
        #expect(b.receiveCoalescing == gro)
        let out = PacketBatch(capacity: 128, slotSize: 2048)
        var expect: [[UInt8]] = []
        // 60 × 1,200 B, a 500 B tail (one GSO message), then 40 × 96 B and a 1 B one (another).
        let lengths = Array(repeating: 1200, count: 60) + [500] + Array(repeating: 96, count: 40) + [1]
        for (i, length) in lengths.enumerated() {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ i) }
            out.set(i, bytes: bytes, endpoint: Endpoint(address: Self.v4Loopback, port: b.port))
            expect.append(bytes)
        }
        out.count = lengths.count
        #expect(try a.send(out, from: 0) == lengths.count)
        let small = PacketBatch(capacity: 7, slotSize: 2048, headroom: 16)  // forces carry-over
        let got = try receive(b, count: expect.count, batch: small)
        #expect(got.map(\.1) == expect)
        #expect(got.allSatisfy { $0.0 == Endpoint(address: Self.v4Loopback, port: a.port) })
        #expect(b.truncatedReceives.load(ordering: .relaxed) == 0)
        let coalesced = b.coalescedReceives
        if gro {
            #expect(coalesced.messages >= 2 && coalesced.datagrams == UInt64(lengths.count), "\(coalesced)")
        } else {
            #expect(coalesced.messages == 0)
        }
        #expect(try b.receive(into: small) == 0)  // nothing left behind
    }

    /// A coalesced segment longer than a slot is dropped and counted, the others still arrive.
    @Test func coalescedSegmentsLongerThanASlotAreCounted() throws {
        let a = try LinuxDatagramBind(port: 0, bufferBytes: 4 << 20, ipv4: Self.v4Loopback, ipv6: nil)
        let b = try LinuxDatagramBind(port: 0, bufferBytes: 4 << 20, ipv4: Self.v4Loopback, ipv6: nil)
        let out = PacketBatch(capacity: 8, slotSize: 2048)
        for i in 0..<4 { out.set(i, bytes: [UInt8](repeating: UInt8(i), count: 1000), endpoint: Endpoint(address: Self.v4Loopback, port: b.port)) }
        out.set(4, bytes: [UInt8](repeating: 9, count: 300), endpoint: Endpoint(address: Self.v4Loopback, port: b.port))
        out.count = 5
        #expect(try a.send(out, from: 0) == 5)
        let tiny = PacketBatch(capacity: 8, slotSize: 512)  // 1,000 B segments do not fit
        let got = try receive(b, count: 1, batch: tiny)
        #expect(got.map(\.1) == [[UInt8](repeating: 9, count: 300)])
        #expect(b.truncatedReceives.load(ordering: .relaxed) == 4)
    }
}
