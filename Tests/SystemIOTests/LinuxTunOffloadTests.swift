import Core
import Glibc
import Packet
import Runtime
import Testing

@testable import SystemIO

/// IPv4 header + `l4` (`proto`), DF set, TTL 64, with a valid header checksum.
private func ipv4(_ src: [UInt8], _ dst: [UInt8], proto: UInt8, id: Int, _ l4: [UInt8]) -> [UInt8] {
    var ip: [UInt8] = [0x45, 0] + be16(20 + l4.count) + be16(id) + [0x40, 0, 64, proto, 0, 0] + src + dst
    ip.replaceSubrange(10..<12, with: be16(Int(checksum(ip))))
    return ip + l4
}

/// The IPv4 pseudo-header sum (RFC 768 / RFC 9293 §3.1), unfolded.
private func pseudo(_ src: [UInt8], _ dst: [UInt8], _ proto: UInt8, _ length: Int) -> UInt32 {
    let words = src + dst + [0, proto] + be16(length)
    var s: UInt32 = 0
    for i in stride(from: 0, to: words.count, by: 2) { s += UInt32(words[i]) << 8 | UInt32(words[i + 1]) }
    return s
}

private func udp4(_ src: [UInt8], _ dst: [UInt8], _ sport: Int, _ dport: Int, id: Int, _ payload: [UInt8]) -> [UInt8] {
    var u: [UInt8] = be16(sport) + be16(dport) + be16(8 + payload.count) + [0, 0] + payload
    u.replaceSubrange(6..<8, with: be16(Int(checksum(u, pseudo(src, dst, 17, u.count)))))
    return ipv4(src, dst, proto: 17, id: id, u)
}

private func tcp4(_ src: [UInt8], _ dst: [UInt8], _ sport: Int, _ dport: Int, id: Int, seq: UInt32, ack: UInt32,
                  flags: UInt8, options: [UInt8] = [], _ payload: [UInt8] = []) -> [UInt8] {
    let offset = UInt8((20 + options.count) / 4) << 4
    var t: [UInt8] = be16(sport) + be16(dport) + be16(Int(seq >> 16)) + be16(Int(seq & 0xFFFF))
        + be16(Int(ack >> 16)) + be16(Int(ack & 0xFFFF)) + [offset, flags] + be16(65535) + [0, 0, 0, 0] + options + payload
    t.replaceSubrange(16..<18, with: be16(Int(checksum(t, pseudo(src, dst, 6, t.count)))))
    return ipv4(src, dst, proto: 6, id: id, t)
}

/// True when the IPv4 packet's header and TCP/UDP checksums verify.
private func checksumsValid(_ p: [UInt8]) -> Bool {
    guard p.count >= 20 else { return false }
    let ihl = Int(p[0] & 0x0F) * 4
    guard checksum(Array(p[0..<ihl])) == 0 else { return false }
    let l4 = Array(p[ihl...])
    return checksum(l4, pseudo(Array(p[12..<16]), Array(p[16..<20]), p[9], l4.count)) == 0
}

private func u32(_ p: [UInt8], _ at: Int) -> UInt32 {
    UInt32(p[at]) << 24 | UInt32(p[at + 1]) << 16 | UInt32(p[at + 2]) << 8 | UInt32(p[at + 3])
}

/// Runs `body` on a fresh thread inside a private network namespace (so `unshare` touches no
/// other thread), with the device `open` returns brought up at `address` and `route` routed into
/// it; returns what `check` recorded as failed, plus any error thrown.
private func inPrivateNamespace(
    _ open: @escaping () throws -> LinuxTun, address: String, route: String,
    _ body: @escaping (LinuxTun, Checks) throws -> Void
) -> [String] {
    let checks = Checks()
    onFreshThread {
        do {
            try Sys.enterPrivateNetworkNamespace()
            let tun = try open()
            let cfg = try NetlinkInterfaceConfigurator()
            try cfg.bringUp(name: tun.name, mtu: tun.mtu, addresses: [InterfaceAddress(address)!],
                            routes: [IPPrefix(route)!])
            defer { _ = cfg.tearDown(); tun.close() }
            try body(tun, checks)
        } catch {
            checks.failures.append("\(error)")
        }
    }
    return checks.failures
}

/// Failed checks of one namespace test. `@unchecked Sendable`: written only by the test's one
/// thread, read after `pthread_join`.
private final class Checks: @unchecked Sendable {
    var failures: [String] = []
    func callAsFunction(_ ok: Bool, _ what: @autoclosure () -> String) { if !ok { failures.append(what()) } }
}

/// Root only: the offloaded TUN device against the real kernel, in a private network namespace.
/// Coalesced TCP and UDP writes must reach local sockets as the original byte streams/datagrams,
/// and super-packets the kernel hands us must come out as valid, ordinary packets.
@Suite struct LinuxTunOffloadTests {
    @Test(.enabled(if: getuid() == 0, "needs root for a private network namespace"))
    func coalescedWritesAndSplitReadsAgainstTheKernel() throws {
        let open = { try LinuxTun(name: "tvo0", mtu: 1400) }
        #expect(inPrivateNamespace(open, address: "10.77.0.1/24", route: "10.78.0.0/16") { tun, check in
        check(tun.vnetHeader && tun.offloads.isSuperset(of: [.checksum, .tso4, .tso6]), "offloads: \(tun.offloads)")
        let me: [UInt8] = [10, 77, 0, 2], gw: [UInt8] = [10, 77, 0, 1]
        let batch = PacketBatch(capacity: 64, slotSize: 2048, headroom: 16)
        var pending: [[UInt8]] = []
        // Reads go through a 3-slot batch, so a super-packet's segments span several calls.
        let small = PacketBatch(capacity: 3, slotSize: 2048, headroom: 16)
        func read(until match: ([UInt8]) -> Bool, tries: Int = 300) throws -> [UInt8]? {
            for _ in 0..<tries {
                if let i = pending.firstIndex(where: match) { return pending.remove(at: i) }
                if try tun.readPackets(into: small) == 0,
                   try tun.waitReadable(timeoutMilliseconds: 10) != .readable { continue }
                for i in 0..<small.count { pending.append(small.bytes(i)) }
            }
            return nil
        }
        func write(_ packets: [[UInt8]]) throws {
            for (i, p) in packets.enumerated() { batch.set(i, bytes: p) }
            batch.count = packets.count
            check(try tun.writePackets(batch) == packets.count, "write \(packets.count)")
        }

        // 1. Ten UDP datagrams of one flow: one super-packet (with USO), ten datagrams arrive.
        let rx = try UDPSocket(bind: "10.77.0.1", port: 7000)
        let datagrams = (0..<10).map { i in (0..<500).map { UInt8(truncatingIfNeeded: $0 * 3 + i) } }
        let before = tun.counters
        try write(datagrams.enumerated().map { udp4(me, gw, 5555, 7000, id: 100 + $0.offset, $0.element) })
        let got = (0..<10).compactMap { _ in rx.receive() }
        check(got == datagrams, "UDP datagrams after a coalesced write: \(got.map(\.count))")
        if tun.offloads.contains(.uso4) {
            check(tun.counters.superPacketsWritten == before.superPacketsWritten + 1
                  && tun.counters.packetsCoalesced == before.packetsCoalesced + 10, "UDP coalesced: \(tun.counters)")
        }

        // 2. A UDP GSO send routed into the TUN device: read back as ten valid datagrams.
        let tx = try UDPSocket(bind: "10.77.0.1", port: 7001)
        let big = (0..<4000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        check(tx.sendSegmented(big, segment: 400, to: "10.78.0.5", port: 9), "UDP_SEGMENT send: errno \(errno)")
        var parts: [[UInt8]] = []
        while parts.count < 10, let p = try read(until: { $0.count > 28 && $0[9] == 17 && $0[16..<20] == [10, 78, 0, 5] }) {
            check(p.count == 428 && checksumsValid(p), "split UDP segment: \(p.count) bytes, checksums valid \(checksumsValid(p))")
            parts.append(Array(p[28...]))
        }
        check(parts.joined().elementsEqual(big), "UDP segments reassemble the sent bytes (\(parts.count) parts)")
        // A super-packet small enough for one slot (3 × 300 bytes) is cut just the same.
        let small3 = (0..<900).map { UInt8(truncatingIfNeeded: $0 &* 11) }
        check(tx.sendSegmented(small3, segment: 300, to: "10.78.0.6", port: 9), "small UDP_SEGMENT send: errno \(errno)")
        var smallParts: [[UInt8]] = []
        while smallParts.count < 3, let p = try read(until: { $0.count > 28 && $0[9] == 17 && $0[16..<20] == [10, 78, 0, 6] }) {
            check(p.count == 328 && checksumsValid(p), "small split UDP segment: \(p.count) bytes")
            smallParts.append(Array(p[28...]))
        }
        check(smallParts.joined().elementsEqual(small3), "small super-packet reassembles (\(smallParts.count) parts)")

        // 3. TCP: handshake by hand, then ten segments in one batch = one coalesced write.
        let listener = try TCPListener(bind: "10.77.0.1", port: 7002)
        let mss: [UInt8] = [2, 4] + be16(1360)
        try write([tcp4(me, gw, 40000, 7002, id: 1, seq: 1000, ack: 0, flags: 0x02, options: mss)])
        guard let synAck = try read(until: { $0.count >= 40 && $0[9] == 6 && $0[33] == 0x12 }) else {
            check(false, "no SYN-ACK"); return
        }
        let isn = u32(synAck, 24)
        try write([tcp4(me, gw, 40000, 7002, id: 2, seq: 1001, ack: isn &+ 1, flags: 0x10)])
        let conn = listener.accept()
        check(conn >= 0, "accept: errno \(errno)")
        let segments = (0..<10).map { i in (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ i) } }
        let c0 = tun.counters
        try write(segments.enumerated().map { i, payload in
            tcp4(me, gw, 40000, 7002, id: 3 + i, seq: 1001 + UInt32(i * 1000), ack: isn &+ 1,
                 flags: i == 9 ? 0x18 : 0x10, payload)
        })
        let stream = TCPListener.receive(conn, count: 10_000)
        check(stream == Array(segments.joined()), "TCP stream after a coalesced write: \(stream.count) bytes")
        check(tun.counters.superPacketsWritten == c0.superPacketsWritten + 1
              && tun.counters.packetsCoalesced == c0.packetsCoalesced + 10, "TCP coalesced: \(tun.counters)")
        let acked = try read(until: { $0.count >= 40 && $0[9] == 6 && $0[33] & 0x10 != 0 && u32($0, 28) == 11_001 })
        check(acked != nil, "the kernel acknowledges all 10,000 bytes")

        // 4. The kernel sends 12,000 bytes back: TSO super-packets split into valid segments.
        let reply = (0..<12_000).map { UInt8(truncatingIfNeeded: $0 &* 5 &+ 1) }
        let r0 = tun.counters
        check(TCPListener.send(conn, reply), "send reply: errno \(errno)")
        var received: [UInt8] = []
        while received.count < reply.count,
              let p = try read(until: { $0.count > 40 && $0[9] == 6 && $0[20] == 0x1B && $0[21] == 0x5A })
        {
            check(p.count <= 1400 && checksumsValid(p), "split TCP segment: \(p.count) bytes")
            received += p[40...]
        }
        check(received == reply, "TCP reply reassembled: \(received.count) bytes")
        check(tun.counters.superPacketsRead > r0.superPacketsRead, "super-packets read: \(tun.counters)")
        close(conn)
        } == [])
    }
}

extension LinuxTunOffloadTests {
    /// UDP GSO through a route whose device has no checksum offload: every datagram still arrives,
    /// in order, with valid checksums (this kernel segments and checksums in software; kernels that
    /// answer EIO instead make the bind turn GSO off and resend one datagram per message).
    @Test(.enabled(if: getuid() == 0, "needs root for a private network namespace"))
    func udpSegmentationThroughADeviceWithoutChecksumOffload() throws {
        let open = { try LinuxTun(name: "tvp0", mtu: 1400, offload: false) }  // plain: no checksum offload
        #expect(inPrivateNamespace(open, address: "10.79.0.1/24", route: "10.80.0.0/16") { tun, check in
        let bind = try LinuxDatagramBind(port: 0, bufferBytes: 1 << 20, ipv4: IPAddress(v4: 0x0A4F_0001), ipv6: nil)
        check(bind.segmentation, "GSO on before the first send")
        let out = PacketBatch(capacity: 8, slotSize: 2048)
        for i in 0..<6 {
            out.set(i, bytes: [UInt8](repeating: UInt8(i), count: 300), endpoint: Endpoint("10.80.0.9:9")!)
        }
        out.count = 6
        check(try bind.send(out, from: 0) == 6, "all six consumed")
        check(bind.failedSends.load(ordering: .relaxed) == 0, "nothing dropped: \(bind.lastSendErrno.load(ordering: .relaxed))")
        let rd = PacketBatch(capacity: 8, slotSize: 2048)
        var payloads: [[UInt8]] = []
        for _ in 0..<200 where payloads.count < 6 {
            if try tun.waitReadable(timeoutMilliseconds: 10) != .readable { continue }
            _ = try tun.readPackets(into: rd)
            for i in 0..<rd.count {
                let p = rd.bytes(i)
                if p.count > 28 && p[9] == 17 && p[16..<20] == [10, 80, 0, 9] {
                    check(checksumsValid(p), "datagram \(payloads.count): checksums")
                    payloads.append(Array(p[28...]))
                }
            }
        }
        check(payloads == (0..<6).map { [UInt8](repeating: UInt8($0), count: 300) }, "six datagrams in order: \(payloads.map(\.count))")
        } == [])
    }
}

extension LinuxTunOffloadTests {
    /// Checksum offload alone (as on a kernel without TSO for TUN): reads still come back complete
    /// and valid, and writes go one packet per writev with an empty header.
    @Test(.enabled(if: getuid() == 0, "needs root for a private network namespace"))
    func checksumOffloadAloneWritesEachPacketAndCompletesReads() throws {
        let open = { try LinuxTun(name: "tvc0", mtu: 1400, offloadLimit: [.checksum]) }
        #expect(inPrivateNamespace(open, address: "10.81.0.1/24", route: "10.82.0.0/16") { tun, check in
        check(tun.offloads == [.checksum], "offloads: \(tun.offloads)")
        let me: [UInt8] = [10, 81, 0, 2], gw: [UInt8] = [10, 81, 0, 1]
        let rx = try UDPSocket(bind: "10.81.0.1", port: 7000)
        let batch = PacketBatch(capacity: 16, slotSize: 2048, headroom: 16)
        let datagrams = (0..<8).map { i in (0..<400).map { UInt8(truncatingIfNeeded: $0 &+ i) } }
        for (i, d) in datagrams.enumerated() { batch.set(i, bytes: udp4(me, gw, 5555, 7000, id: 50 + i, d)) }
        batch.count = datagrams.count
        check(try tun.writePackets(batch) == datagrams.count, "all written")
        check((0..<8).compactMap { _ in rx.receive() } == datagrams, "datagrams arrive one by one")
        check(tun.counters.superPacketsWritten == 0 && tun.counters.refusedWrites == 0, "no coalescing: \(tun.counters)")
        // A datagram out through the TUN: its checksum is left partial by the kernel and completed on read.
        let tx = try UDPSocket(bind: "10.81.0.1", port: 7001)
        check(tx.sendSegmented([UInt8](repeating: 9, count: 300), segment: 1000, to: "10.82.0.7", port: 9), "send")
        var found: [UInt8]? = nil
        for _ in 0..<200 where found == nil {
            if try tun.waitReadable(timeoutMilliseconds: 10) != .readable { continue }
            _ = try tun.readPackets(into: batch)
            for i in 0..<batch.count where batch.bytes(i).count > 28 && batch.bytes(i)[16..<20] == [10, 82, 0, 7] {
                found = batch.bytes(i)
            }
        }
        check(found.map { $0.count == 328 && checksumsValid($0) } == true, "read back complete: \(found?.count ?? -1)")
        } == [])
    }
}

/// Minimal blocking sockets for the test (2 s timeouts).
private struct UDPSocket {
    let fd: Int32
    init(bind address: String, port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var (sa, length) = Endpoint("\(address):\(port)")!.sockaddrStorage
        let r = withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) } }
        guard r == 0 else { throw SystemError("bind", errno: errno) }
        var tv = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }
    func receive() -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 2048)
        let n = recv(fd, &buffer, buffer.count, 0)
        return n < 0 ? nil : Array(buffer[0..<n])
    }
    func sendSegmented(_ bytes: [UInt8], segment: Int, to address: String, port: Int) -> Bool {
        var size = Int32(segment)
        guard setsockopt(fd, 17 /* SOL_UDP */, 103 /* UDP_SEGMENT */, &size, 4) == 0 else { return false }
        var (sa, length) = Endpoint("\(address):\(port)")!.sockaddrStorage
        let n = withUnsafePointer(to: &sa) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes, bytes.count, 0, $0, length) }
        }
        return n == bytes.count
    }
}

private struct TCPListener {
    let fd: Int32
    init(bind address: String, port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var (sa, length) = Endpoint("\(address):\(port)")!.sockaddrStorage
        let r = withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) } }
        guard r == 0, listen(fd, 4) == 0 else { throw SystemError("bind/listen", errno: errno) }
        var tv = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }
    func accept() -> Int32 {
        let c = Glibc.accept(fd, nil, nil)
        var tv = timeval(tv_sec: 2, tv_usec: 0)
        if c >= 0 { setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size)) }
        return c
    }
    static func receive(_ fd: Int32, count: Int) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while out.count < count {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            out += buffer[0..<n]
        }
        return out
    }
    static func send(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        Glibc.send(fd, bytes, bytes.count, 0) == bytes.count
    }
}
