import Core
import Engine
import SystemIO
import Packet
import Runtime
import Testing
import TestSupport

@Suite struct ChannelTunTests {
    @Test func packetsFlowBothWays() throws {
        let tun = ChannelTun(name: "tvtest0", mtu: 1420)
        let batch = PacketBatch(capacity: 2, slotSize: 256, headroom: 16)
        #expect(try tun.waitReadable(timeoutMilliseconds: 0) == .timedOut)
        #expect(try tun.readPackets(into: batch) == 0)
        tun.inject([1, 2, 3])
        tun.inject([4])
        tun.inject([5, 5])
        #expect(try tun.waitReadable(timeoutMilliseconds: 0) == .readable)
        #expect(try tun.readPackets(into: batch) == 2)
        #expect(batch.bytes(0) == [1, 2, 3] && batch.bytes(1) == [4])
        #expect(batch.offsets[0] == 16)
        #expect(try tun.waitReadable(timeoutMilliseconds: 0) == .readable)
        #expect(try tun.readPackets(into: batch) == 1)
        #expect(batch.bytes(0) == [5, 5])
        #expect(try tun.waitReadable(timeoutMilliseconds: 0) == .timedOut)

        // The engine writes from each slot's offset: move past a 2-byte "header" without copying.
        batch.set(0, bytes: [9, 9, 7, 7])
        batch.set(1, bytes: [9, 9, 8])
        batch.offsets[0] += 2; batch.lengths[0] -= 2
        batch.offsets[1] += 2; batch.lengths[1] -= 2
        batch.count = 2
        #expect(try tun.writePackets(batch) == 2)
        #expect(tun.takeWritten() == [[7, 7], [8]])
        #expect(tun.takeWritten().isEmpty)
    }

    @Test func oversizedInjectedPacketsAreDropped() throws {
        let tun = ChannelTun()
        tun.inject([UInt8](repeating: 1, count: 300))
        tun.inject([2])
        let batch = PacketBatch(capacity: 4, slotSize: 100)
        #expect(try tun.readPackets(into: batch) == 1)
        #expect(batch.bytes(0) == [2])
        #expect(tun.truncatedReads == 1)
    }

    @Test func closeWakesAReaderOnAnotherThread() async throws {
        let tun = ChannelTun()
        let waiter = Task.detached { try tun.waitReadable(timeoutMilliseconds: 10_000) }
        tun.close()
        #expect(try await waiter.value == .closed)
    }

    @Test func waitWrittenSeesPacketsFromAnotherThread() async throws {
        let tun = ChannelTun()
        let writer = Task.detached {
            let b = PacketBatch(capacity: 1, slotSize: 64)
            for i in 0..<3 {
                b.set(0, bytes: [UInt8(i)])
                b.count = 1
                _ = try tun.writePackets(b)
            }
        }
        let got = tun.waitWritten(count: 3)
        try await writer.value
        #expect(got + tun.takeWritten() == [[0], [1], [2]])
    }
}

@Suite struct ChannelBindTests {
    @Test func pairExchangesDatagramsWithSources() throws {
        let (a, b) = ChannelNetwork.pair()
        let out = PacketBatch(capacity: 8, slotSize: 128)
        for i in 0..<5 { out.set(i, bytes: [UInt8(i), 0xAA], endpoint: b.endpoint) }
        out.count = 5
        #expect(try a.send(out) == 5)
        #expect(try a.send(out, from: 3) == 2)
        #expect(b.pending == 7)
        #expect(try b.waitReadable(timeoutMilliseconds: 0) == .readable)
        let inb = PacketBatch(capacity: 4, slotSize: 128)
        #expect(try b.receive(into: inb) == 4)
        #expect((0..<4).map { inb.bytes($0) } == [[0, 0xAA], [1, 0xAA], [2, 0xAA], [3, 0xAA]])
        #expect((0..<4).allSatisfy { inb.endpoints[$0] == a.endpoint })
        #expect(try b.receive(into: inb) == 3)
        #expect((0..<3).map { inb.bytes($0) } == [[4, 0xAA], [3, 0xAA], [4, 0xAA]])
        #expect(try b.waitReadable(timeoutMilliseconds: 0) == .timedOut)
        #expect(try a.waitReadable(timeoutMilliseconds: 0) == .timedOut)
    }

    @Test func lossIsCounted() throws {
        let net = ChannelNetwork()
        let a = net.bind()
        let b = net.bind(address: IPAddress("fd00::2")!, port: 51820, queueLimit: 2)
        #expect(b.endpoint == Endpoint("[fd00::2]:51820"))
        let out = PacketBatch(capacity: 4, slotSize: 64)
        for i in 0..<3 { out.set(i, bytes: [UInt8(i)], endpoint: b.endpoint) }
        out.set(3, bytes: [9], endpoint: Endpoint("192.0.2.99:9")!)
        out.count = 4
        #expect(try a.send(out) == 4)
        #expect(b.pending == 2)
        #expect(b.droppedFull == 1)
        #expect(net.undeliverable == 1)
        #expect(net.delivered == 2)
        b.close()
        #expect(try b.waitReadable(timeoutMilliseconds: 0) == .closed)
        #expect(try a.send(out, from: 3) == 1)
        out.set(0, bytes: [1], endpoint: b.endpoint)
        out.count = 1
        #expect(try a.send(out) == 1)
        #expect(net.undeliverable == 3)
    }
}

@Suite struct ManualClockTests {
    @Test func advanceMovesEveryClockSuspendSkipsMonotonicAndStepsMoveOnlyWall() {
        let clock = ManualClock()
        let mono = clock.monotonicNanoseconds()
        let boot = clock.boottimeNanoseconds()
        let wall = clock.wallMilliseconds()
        #expect(wall == ManualClock.defaultWallStart)
        clock.advance(by: .seconds(5) + .milliseconds(250))
        #expect(clock.monotonicNanoseconds() - mono == 5_250_000_000)
        #expect(clock.boottimeNanoseconds() - boot == 5_250_000_000)
        #expect(clock.wallMilliseconds() - wall == 5_250)
        #expect(clock.wallNanoseconds() == clock.wallMilliseconds() * 1_000_000)
        clock.suspend(for: .seconds(60))
        #expect(clock.monotonicNanoseconds() - mono == 5_250_000_000)
        #expect(clock.boottimeNanoseconds() - boot == 65_250_000_000)
        #expect(clock.wallMilliseconds() - wall == 65_250)
        clock.setWall(milliseconds: wall - 3_600_000)
        #expect(clock.wallMilliseconds() == wall - 3_600_000)
        #expect(clock.boottimeNanoseconds() - boot == 65_250_000_000)
        #expect(clock.wallSteps == 1)
    }

    @Test func systemClockIsSane() {
        let c: any TimeSource = SystemClock()
        let a = c.monotonicNanoseconds()
        let b = c.monotonicNanoseconds()
        #expect(b >= a)
        #expect(c.boottimeNanoseconds() >= a)  // boottime = monotonic + time suspended
        // After 2020-01-01 and before 2100-01-01.
        #expect(c.wallMilliseconds() > 1_577_836_800_000 && c.wallMilliseconds() < 4_102_444_800_000)
    }
}
