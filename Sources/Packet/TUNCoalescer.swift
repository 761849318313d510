import Core
/// GRO for TUN writes: groups the packets of one batch into TCP and UDP super-packets, so a TUN
/// device opened with `IFF_VNET_HDR` (and `TUNSETOFFLOAD` TSO/USO) forwards one skb instead of
/// dozens. The rules follow the kernel's `tcp_gro_receive` (`net/ipv4/tcp_offload.c`) and UDP
/// GRO (`net/ipv4/udp_offload.c`); `GSOSegmenter` is the exact inverse.
///
/// A packet joins the group holding its flow's previous packet when: both are IPv4 without
/// options and not fragments, or IPv6 with TCP/UDP right after the fixed header; the 5-tuple,
/// IPv4 TOS/TTL/DF (IPv6 traffic class, flow label, hop limit) are equal; the IPv4 ID is the
/// previous + 1. TCP also needs: the same ACK number, window and options bytes; sequence =
/// previous sequence + previous payload; flags exactly ACK or ACK|PSH (PSH ends the group);
/// a payload no longer than the first's (a shorter one ends the group); a valid checksum. UDP
/// (only when asked) needs a nonzero valid checksum and the same length rule. A group holds at
/// most `maxMembers` packets and 65535 IP bytes. A packet of a flow that cannot join starts a
/// new group, so later packets of that flow are never moved ahead of it: order within a flow is
/// preserved. Preallocated in `init`; `coalesce` allocates nothing.
public final class TUNCoalescer {
    /// Most packets in one group (the kernel's `MAX_GRO_SKBS`/`UDP_GRO_CNT_MAX`, 64).
    public static let maxMembers = 64

    /// Per packet: what parsing found. `kind`: 0 no flow, 1 TCPv4, 2 TCPv6, 3 UDPv4, 4 UDPv6.
    private struct Info {
        var kind: UInt8 = 0
        var candidate = false
        var push = false
        var resetsFlows = false
        var ipLength: Int32 = 0
        var headerLength: Int32 = 0
        var payload: Int32 = 0
        var id: UInt16 = 0
        var seq: UInt32 = 0
        var hash: UInt64 = 0
        var group: Int32 = 0
        var next: Int32 = -1
    }

    private struct Group {
        var first: Int32 = 0
        var last: Int32 = 0
        var count: Int32 = 0
        var total: Int32 = 0
        var offset: Int32 = 0
        var open = false
    }

    /// Max packets per call.
    public let capacity: Int
    private let info: UnsafeMutablePointer<Info>
    private let groups: UnsafeMutablePointer<Group>
    private let memberList: UnsafeMutablePointer<Int32>
    private let flowRep: UnsafeMutablePointer<Int32>
    private let flowGroup: UnsafeMutablePointer<Int32>
    private var groupCount = 0
    private var flowCount = 0
    private var packets: UnsafePointer<UnsafeMutableRawBufferPointer>?

    /// A coalescer for batches of up to `capacity` packets.
    public init(capacity: Int) {
        precondition(capacity > 0)
        self.capacity = capacity
        info = .allocate(capacity: capacity)
        info.initialize(repeating: Info(), count: capacity)
        groups = .allocate(capacity: capacity)
        groups.initialize(repeating: Group(), count: capacity)
        memberList = .allocate(capacity: capacity)
        memberList.initialize(repeating: 0, count: capacity)
        flowRep = .allocate(capacity: capacity)
        flowRep.initialize(repeating: 0, count: capacity)
        flowGroup = .allocate(capacity: capacity)
        flowGroup.initialize(repeating: 0, count: capacity)
    }

    deinit {
        info.deallocate()
        groups.deallocate()
        memberList.deallocate()
        flowRep.deallocate()
        flowGroup.deallocate()
    }

    /// Plans groups over packets 0..<count (each an IPv4/IPv6 packet, exactly its bytes).
    /// Rewrites the first packet of every multi-member group in place: IPv4 total length and
    /// header checksum / IPv6 payload length, TCP PSH from the last member, UDP length, and the
    /// L4 checksum field set to the folded pseudo-header sum over the whole L4 length (what the
    /// kernel expects with `VIRTIO_NET_HDR_F_NEEDS_CSUM`). Single-member groups are untouched.
    /// Returns the number of groups, ordered by their first member's index. `allowTCP`/`allowUDP`
    /// say which segmentation offloads the device accepts: packets of the other kind stay alone.
    public func coalesce(_ packets: UnsafePointer<UnsafeMutableRawBufferPointer>, count: Int, allowTCP: Bool = true,
                         allowUDP: Bool) -> Int {
        precondition(count >= 0 && count <= capacity)
        self.packets = packets
        groupCount = 0
        flowCount = 0
        for i in 0..<count {
            let p = UnsafeRawBufferPointer(packets[i])
            info[i] = Self.parse(p, allowTCP: allowTCP, allowUDP: allowUDP)
            let me = info[i]
            if me.kind == 0 {
                if me.resetsFlows { flowCount = 0 }
                startGroup(i, open: false)
                continue
            }
            var flow = -1
            var f = flowCount - 1
            while f >= 0 {
                let rep = Int(flowRep[f])
                if info[rep].hash == me.hash && info[rep].kind == me.kind && Self.sameFlow(p, UnsafeRawBufferPointer(packets[rep])) {
                    flow = f
                    break
                }
                f -= 1
            }
            if flow >= 0 {
                let g = Int(flowGroup[flow])
                if me.candidate && groups[g].open && canJoin(i, g) {
                    append(i, g)
                    continue
                }
            } else {
                flow = flowCount
                flowCount += 1
                flowRep[flow] = Int32(i)
            }
            flowGroup[flow] = Int32(groupCount)
            startGroup(i, open: me.candidate && !me.push)
        }
        // Members, compacted in packet order, and the rewritten first packets.
        var offset: Int32 = 0
        for g in 0..<groupCount {
            groups[g].offset = offset
            var m = groups[g].first
            var k = offset
            while m >= 0 {
                memberList[Int(k)] = m
                k += 1
                m = info[Int(m)].next
            }
            offset = k
            if groups[g].count > 1 { rewriteFirst(g) }
        }
        return groupCount
    }

    /// The `virtio_net_hdr` to write before group `g`: all zero for a single packet; otherwise
    /// NEEDS_CSUM with the TCPv4/TCPv6/UDP_L4 GSO type, header length, the first member's
    /// payload length as `gsoSize`, and the checksum at IP header + 16 (TCP) or + 6 (UDP).
    public func header(ofGroup g: Int) -> VirtioNetHeader {
        precondition(g >= 0 && g < groupCount)
        let group = groups[g]
        guard group.count > 1 else { return VirtioNetHeader() }
        let first = info[Int(group.first)]
        let tcp = first.kind == 1 || first.kind == 2
        let type = first.kind == 1 ? VirtioNetHeader.gsoTCPv4 : first.kind == 2 ? VirtioNetHeader.gsoTCPv6 : VirtioNetHeader.gsoUDPL4
        return VirtioNetHeader(flags: VirtioNetHeader.needsChecksum, gsoType: type, headerLength: UInt16(first.headerLength),
                               gsoSize: UInt16(first.payload), checksumStart: UInt16(first.ipLength),
                               checksumOffset: tcp ? 16 : 6)
    }

    /// Packet indices of group `g`, in order. Members after the first contribute only their
    /// bytes from `skip(ofGroup:)` on.
    public func members(ofGroup g: Int) -> UnsafeBufferPointer<Int32> {
        precondition(g >= 0 && g < groupCount)
        return UnsafeBufferPointer(start: memberList + Int(groups[g].offset), count: Int(groups[g].count))
    }

    /// IP + transport header length of group `g`: the bytes of members 2... to leave out
    /// (0 for a packet that is no coalescing candidate).
    public func skip(ofGroup g: Int) -> Int {
        precondition(g >= 0 && g < groupCount)
        let first = info[Int(groups[g].first)]
        return first.candidate ? Int(first.headerLength) : 0
    }

    private func startGroup(_ i: Int, open: Bool) {
        let me = info[i]
        groups[groupCount] = Group(first: Int32(i), last: Int32(i), count: 1, total: me.headerLength + me.payload,
                                   offset: 0, open: open && Self.maxMembers > 1)
        info[i].group = Int32(groupCount)
        info[i].next = -1
        groupCount += 1
    }

    private func append(_ i: Int, _ g: Int) {
        let me = info[i]
        let first = info[Int(groups[g].first)]
        info[Int(groups[g].last)].next = Int32(i)
        info[i].group = Int32(g)
        info[i].next = -1
        groups[g].last = Int32(i)
        groups[g].count += 1
        groups[g].total += me.payload
        if me.push || me.payload < first.payload || Int(groups[g].count) >= Self.maxMembers { groups[g].open = false }
    }

    /// Whether candidate `i` may be appended to open group `g` of the same flow.
    private func canJoin(_ i: Int, _ g: Int) -> Bool {
        guard let packets else { return false }
        let me = info[i]
        let fi = Int(groups[g].first)
        let first = info[fi]
        let last = info[Int(groups[g].last)]
        guard me.payload <= first.payload, Int(groups[g].total) + Int(me.payload) <= 65535 else { return false }
        let p = UnsafeRawBufferPointer(packets[i])
        let f = UnsafeRawBufferPointer(packets[fi])
        if me.kind == 1 || me.kind == 3 {
            // TOS, flags (DF; fragments are no candidates), TTL.
            guard p[1] == f[1], p.be16(6) == f.be16(6), p[8] == f[8], me.id == last.id &+ 1 else { return false }
        } else {
            // Version/traffic class/flow label, hop limit.
            guard p.be32(0) == f.be32(0), p[7] == f[7] else { return false }
        }
        if me.kind == 1 || me.kind == 2 {
            let ip = Int(me.ipLength)
            guard me.headerLength == first.headerLength, me.seq == last.seq &+ UInt32(truncatingIfNeeded: last.payload),
                  p.be32(ip + 8) == f.be32(ip + 8), p[ip + 12] == f[ip + 12], p.be16(ip + 14) == f.be16(ip + 14),
                  p.be16(ip + 18) == f.be16(ip + 18) else { return false }  // ACK, offset+reserved, window, urgent
            let options = Int(me.headerLength) - ip - 20
            var k = ip + 20
            while k < ip + 20 + options {
                guard p[k] == f[k] else { return false }
                k += 1
            }
        }
        return true
    }

    private func rewriteFirst(_ g: Int) {
        guard let packets else { return }
        let group = groups[g]
        let first = info[Int(group.first)]
        let p = packets[Int(group.first)]
        let ip = Int(first.ipLength)
        let total = Int(group.total)
        let v4 = first.kind == 1 || first.kind == 3
        let tcp = first.kind == 1 || first.kind == 2
        var c = InternetChecksum()
        if v4 {
            p.setBE16(UInt16(total), at: 2)
            p.setBE16(0, at: 10)
            p.setBE16(InternetChecksum.checksum(UnsafeRawBufferPointer(rebasing: p[0..<ip])), at: 10)
            c.add(UnsafeRawBufferPointer(rebasing: p[12..<20]))
        } else {
            p.setBE16(UInt16(total - 40), at: 4)
            c.add(UnsafeRawBufferPointer(rebasing: p[8..<40]))
        }
        c.add(UInt32(total - ip))
        if tcp {
            if info[Int(group.last)].push { p[ip + 13] |= 0x08 }
            c.add(UInt16(6))
            p.setBE16(c.folded, at: ip + 16)
        } else {
            p.setBE16(UInt16(total - ip), at: ip + 4)
            c.add(UInt16(17))
            p.setBE16(c.folded, at: ip + 6)
        }
    }

    /// Same IP version, protocol, addresses and ports (both already keyed by `parse`).
    private static func sameFlow(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        if a[0] >> 4 == 4 {
            let ihlA = Int(a[0] & 0x0F) * 4, ihlB = Int(b[0] & 0x0F) * 4
            return a.be64(12) == b.be64(12) && a.be32(ihlA) == b.be32(ihlB)
        }
        return a.be64(8) == b.be64(8) && a.be64(16) == b.be64(16) && a.be64(24) == b.be64(24)
            && a.be64(32) == b.be64(32) && a.be32(40) == b.be32(40)
    }

    /// Keys a packet to its flow (when it is TCP/UDP with visible ports) and decides whether it
    /// is a coalescing candidate.
    private static func parse(_ p: UnsafeRawBufferPointer, allowTCP: Bool, allowUDP: Bool) -> Info {
        var r = Info()
        let n = p.count
        guard n >= 20 else { return r }
        let proto: UInt8
        let ip: Int
        var ipOK: Bool
        switch p[0] >> 4 {
        case 4:
            ip = Int(p[0] & 0x0F) * 4
            proto = p[9]
            guard proto == 6 || proto == 17 else { return r }
            let fragment = p.be16(6) & 0x3FFF
            if fragment & 0x1FFF != 0 || ip < 20 || n < ip + (proto == 6 ? 20 : 8) {
                r.resetsFlows = true  // TCP/UDP whose ports we cannot see
                return r
            }
            ipOK = ip == 20 && fragment == 0 && Int(p.be16(2)) == n
                && InternetChecksum.checksum(UnsafeRawBufferPointer(rebasing: p[0..<20])) == 0
            r.kind = proto == 6 ? 1 : 3
            r.hash = UInt64(p.be64(12)) &* 0x9E37_79B9_7F4A_7C15 ^ UInt64(p.be32(ip)) &* 0xC2B2_AE3D_27D4_EB4F ^ UInt64(proto)
            r.id = p.be16(4)
        case 6:
            guard n >= 40 else { return r }
            ip = 40
            proto = p[6]
            guard proto == 6 || proto == 17 else {
                // ICMPv6 and "no next header" belong to no TCP/UDP flow; anything else may hide one.
                r.resetsFlows = proto != 58 && proto != 59
                return r
            }
            guard n >= ip + (proto == 6 ? 20 : 8) else { r.resetsFlows = true; return r }
            ipOK = Int(p.be16(4)) + 40 == n
            r.kind = proto == 6 ? 2 : 4
            var h = p.be64(8) &* 0x9E37_79B9_7F4A_7C15
            h = (h ^ p.be64(16)) &* 0xC2B2_AE3D_27D4_EB4F
            h = (h ^ p.be64(24)) &* 0x9E37_79B9_7F4A_7C15
            h = (h ^ p.be64(32)) &* 0xC2B2_AE3D_27D4_EB4F
            r.hash = h ^ UInt64(p.be32(40)) ^ UInt64(proto) << 40
        default:
            return r
        }
        r.ipLength = Int32(ip)
        guard ipOK else { return r }
        if proto == 6 {
            let th = Int(p[ip + 12] >> 4) * 4
            let flags = p[ip + 13]
            guard allowTCP, th >= 20, ip + th < n, flags == 0x10 || flags == 0x18 else { return r }
            r.headerLength = Int32(ip + th)
            r.payload = Int32(n - ip - th)
            r.seq = p.be32(ip + 4)
            r.push = flags == 0x18
        } else {
            guard allowUDP, Int(p.be16(ip + 4)) == n - ip, p.be16(ip + 6) != 0, n > ip + 8 else { return r }
            r.headerLength = Int32(ip + 8)
            r.payload = Int32(n - ip - 8)
        }
        var c = InternetChecksum()
        c.add(UnsafeRawBufferPointer(rebasing: p[(ip == 20 ? 12 : 8)..<(ip == 20 ? 20 : 40)]))
        c.add(UInt16(proto))
        c.add(UInt32(n - ip))
        c.add(GSOSegmenter.sum(p.baseAddress! + ip, count: n - ip))
        r.candidate = c.folded == 0xFFFF
        return r
    }
}
