import Core
import Glibc
import Packet
import Runtime
import Testing

@testable import SystemIO

/// Runs `body` on a fresh pthread and waits for it (so `unshare(CLONE_NEWNET)` affects only that
/// thread, never the test runner's threads).
func onFreshThread(_ body: @escaping () -> Void) {
    final class Box { let body: () -> Void; init(_ b: @escaping () -> Void) { body = b } }
    let context = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    let r = pthread_create(&thread, nil, { ctx in
        Unmanaged<Box>.fromOpaque(ctx!).takeRetainedValue().body()
        return nil
    }, context)
    precondition(r == 0, "pthread_create failed")
    pthread_join(thread, nil)
}

/// Internet checksum (RFC 1071) over `bytes`, starting from `sum`.
func checksum(_ bytes: [UInt8], _ sum: UInt32 = 0) -> UInt16 {
    var s = sum
    var i = 0
    while i + 1 < bytes.count { s += UInt32(bytes[i]) << 8 | UInt32(bytes[i + 1]); i += 2 }
    if i < bytes.count { s += UInt32(bytes[i]) << 8 }
    while s >> 16 != 0 { s = (s & 0xFFFF) + (s >> 16) }
    return ~UInt16(s)
}

func be16(_ v: Int) -> [UInt8] { [UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }

/// An ICMP echo request `src -> dst` (IPv4) with identifier `id`.
private func echo4(_ src: [UInt8], _ dst: [UInt8], id: Int) -> [UInt8] {
    var icmp: [UInt8] = [8, 0, 0, 0] + be16(id) + be16(1) + Array("tunnelvision".utf8)
    icmp.replaceSubrange(2..<4, with: be16(Int(checksum(icmp))))
    var ip: [UInt8] = [0x45, 0] + be16(20 + icmp.count) + [0, 1, 0x40, 0, 64, 1, 0, 0] + src + dst
    ip.replaceSubrange(10..<12, with: be16(Int(checksum(ip))))
    return ip + icmp
}

/// An ICMPv6 echo request `src -> dst` with identifier `id` (checksum over the RFC 8200 §8.1 pseudo-header).
private func echo6(_ src: [UInt8], _ dst: [UInt8], id: Int) -> [UInt8] {
    var icmp: [UInt8] = [128, 0, 0, 0] + be16(id) + be16(1) + Array("tunnelvision".utf8)
    let pseudo = src + dst + [0, 0] + be16(icmp.count) + [0, 0, 0, 58]
    icmp.replaceSubrange(2..<4, with: be16(Int(checksum(pseudo + icmp))))
    return [0x60, 0, 0, 0] + be16(icmp.count) + [58, 64] + src + dst + icmp
}

/// Packets read from a TUN device so far, searchable (the kernel also sends its own: MLD, RS).
private final class TunReader {
    let tun: LinuxTun
    var seen: [[UInt8]] = []
    let batch = PacketBatch(capacity: 8, slotSize: 2048, headroom: 16)
    init(_ tun: LinuxTun) { self.tun = tun }

    /// The first packet read (now or within `tries` × 10 ms) that satisfies `match`.
    func find(tries: Int = 300, _ match: ([UInt8]) -> Bool) throws -> [UInt8]? {
        for _ in 0..<tries {
            if let p = seen.first(where: match) { return p }
            if try tun.waitReadable(timeoutMilliseconds: 10) != .readable { continue }
            _ = try tun.readPackets(into: batch)
            for i in 0..<batch.count { seen.append(batch.bytes(i)) }
        }
        return seen.first(where: match)
    }
}

/// Root only: TUN and rtnetlink for real, in a private network namespace of one thread. The kernel
/// answers pings written into the TUN device, and traffic to a configured route comes out of it.
@Suite struct LinuxTunTests {
    @Test(.enabled(if: getuid() == 0, "needs root for a private network namespace"))
    func kernelAnswersThroughTunAndRoutesLeadIntoIt() throws {
        final class Outcome: @unchecked Sendable {  // written by the one thread, read after pthread_join
            var failures: [String] = []
            var steps: [String] = []
        }
        let outcome = Outcome()
        onFreshThread {
            func check(_ ok: Bool, _ what: String) { if !ok { outcome.failures.append(what) } }
            do {
                try Sys.enterPrivateNetworkNamespace()
                let tun = try LinuxTun(name: "tvt0", mtu: 1400)
                let cfg = try NetlinkInterfaceConfigurator()
                try cfg.bringUp(
                    name: tun.name, mtu: 1400,
                    addresses: [InterfaceAddress("10.77.0.1/24")!, InterfaceAddress("fd77::1/64")!],
                    routes: [IPPrefix("10.78.0.0/16")!, IPPrefix("fd78::/48")!])
                outcome.steps = cfg.journal.map(\.description)
                let link = try NetlinkSocket().link(named: "tvt0")
                check(link.mtu == 1400 && link.isUp, "link after bring-up: \(link)")

                // Ping the interface's own IPv4 address from a "peer" behind it.
                let batch = PacketBatch(capacity: 2, slotSize: 2048)
                batch.set(0, bytes: echo4([10, 77, 0, 2], [10, 77, 0, 1], id: 0x1234))
                batch.set(1, bytes: echo6([0xfd, 0x77] + [UInt8](repeating: 0, count: 13) + [2],
                                          [0xfd, 0x77] + [UInt8](repeating: 0, count: 13) + [1], id: 0x5678))
                batch.count = 2
                check(try tun.writePackets(batch) == 2, "write two echo requests")
                let reader = TunReader(tun)
                let reply4 = try reader.find { p in p.count >= 28 && p[0] >> 4 == 4 && p[9] == 1 && p[20] == 0 && p[24] == 0x12 && p[25] == 0x34 }
                check(reply4 != nil && reply4![12..<16] == [10, 77, 0, 1] && reply4![16..<20] == [10, 77, 0, 2], "IPv4 echo reply")
                // Just after link up the IPv6 address may still be settling (the kernel finishes
                // address setup asynchronously) and drops the first request: ask again, like ping6.
                var reply6: [UInt8]? = nil
                for _ in 0..<30 where reply6 == nil {
                    reply6 = try reader.find(tries: 10) { p in p.count >= 48 && p[0] >> 4 == 6 && p[6] == 58 && p[40] == 129 && p[44] == 0x56 && p[45] == 0x78 }
                    if reply6 == nil {
                        batch.count = 1
                        batch.set(0, bytes: echo6([0xfd, 0x77] + [UInt8](repeating: 0, count: 13) + [2],
                                                  [0xfd, 0x77] + [UInt8](repeating: 0, count: 13) + [1], id: 0x5678))
                        _ = try tun.writePackets(batch)
                    }
                }
                check(reply6 != nil, "IPv6 echo reply; counters \(tun.counters); seen \(reader.seen.map { $0.prefix(48).map { String($0, radix: 16) }.joined(separator: " ") })")

                // A datagram to the routed prefix leaves through the TUN device.
                let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
                var (to, length) = Endpoint("10.78.0.5:9")!.sockaddrStorage
                let sent = withUnsafePointer(to: &to) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, "hi", 2, 0, $0, length) }
                }
                close(fd)
                check(sent == 2, "sendto 10.78.0.5: errno \(errno)")
                let udp = try reader.find { p in p.count >= 28 && p[0] >> 4 == 4 && p[9] == 17 && p[16..<20] == [10, 78, 0, 5] }
                check(udp != nil && udp![12..<16] == [10, 77, 0, 1], "UDP to the routed prefix via tvt0")

                // A packet that is neither IPv4 nor IPv6 is refused by the kernel: counted, not thrown.
                batch.set(0, bytes: [0x00, 1, 2, 3])
                batch.count = 1
                check(try tun.writePackets(batch) == 1, "malformed write consumed")
                check(tun.counters.refusedWrites == 1, "malformed write counted: \(tun.counters)")

                // Multi-queue: a second open of the same name is a second queue of one interface.
                let q1 = try LinuxTun(name: "tvmq0", mtu: 1400, multiQueue: true)
                let q2 = try LinuxTun(name: "tvmq0", mtu: 1400, multiQueue: true)
                check(q1.name == "tvmq0" && q2.name == "tvmq0", "multi-queue names")
                check(try NetlinkSocket().link(named: "tvmq0").index > 0, "multi-queue interface exists")

                let errors = cfg.tearDown()
                check(errors.isEmpty, "tear-down: \(errors)")
                check(cfg.journal.isEmpty, "journal emptied")
                let after = try NetlinkSocket().link(named: "tvt0")
                check(after.mtu == 1500 && !after.isUp, "link after tear-down: \(after)")
                tun.close()
            } catch {
                outcome.failures.append("\(error)")
            }
        }
        #expect(outcome.failures == [])
        #expect(outcome.steps == ["mtu 1500 -> 1400", "address 10.77.0.1/24", "address fd77::1/64", "link up", "route 10.78.0.0/16", "route fd78::/48"])
    }
}
