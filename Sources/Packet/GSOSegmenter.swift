import Core
/// Splits what a TUN device opened with `IFF_VNET_HDR` returns into packets ready to encrypt:
/// completes `NEEDS_CSUM` checksums and cuts GSO super-packets (up to 64 KiB) into segments of
/// `gsoSize` payload bytes, as the kernel's software GSO would (`net/ipv4/tcp_offload.c`
/// `tcp_gso_segment`, `net/ipv4/udp_offload.c` `__udp_gso_segment`, `net/ipv4/af_inet.c`
/// `inet_gso_segment`, `net/ipv6/ip6_offload.c`).
///
/// Per segment: IPv4 total length, ID = first ID + index (mod 2^16) and header checksum; IPv6
/// payload length; TCP sequence number advanced by `index × gsoSize`, FIN and PSH only on the
/// last segment, CWR only on the first; UDP length; a full L4 checksum computed from scratch
/// (the super-packet's partial checksum is ignored). `plan` validates everything it relies on,
/// so `segment` never reads or writes out of bounds. Pure: no I/O, no allocation.
public enum GSOSegmenter {
    /// Most TCP segments one super-packet may give: 64 KiB at the kernel's smallest MSS
    /// (`tcp_min_snd_mss` 48) is 1365.
    public static let maxTCPSegments = 1536
    /// Most UDP datagrams one super-packet may give (the kernel's `UDP_MAX_SEGMENTS`, 128).
    public static let maxUDPSegments = 128

    /// Validates `packet` (the bytes after the header) against `header` and says how it splits.
    public static func plan(_ header: VirtioNetHeader, packet: UnsafeRawBufferPointer) throws(OffloadError) -> GSOSplit {
        let n = packet.count
        let gso = header.gsoType & ~VirtioNetHeader.gsoECN
        let ecn = header.gsoType & VirtioNetHeader.gsoECN != 0
        switch gso {
        case VirtioNetHeader.gsoNone:
            if ecn { throw .unsupportedGSOType(header.gsoType) }
            guard header.flags & VirtioNetHeader.needsChecksum != 0 else {
                return GSOSplit(count: 1, maxSegmentLength: n, kind: .copy, packetLength: n)
            }
            let start = Int(header.checksumStart)
            let field = start + Int(header.checksumOffset)
            guard field + 2 <= n else { throw .checksumOutOfRange }
            return GSOSplit(count: 1, maxSegmentLength: n, kind: .completeChecksum, packetLength: n,
                            checksumStart: start, checksumField: field)
        case VirtioNetHeader.gsoTCPv4, VirtioNetHeader.gsoTCPv6, VirtioNetHeader.gsoUDPL4:
            if ecn && gso == VirtioNetHeader.gsoUDPL4 { throw .unsupportedGSOType(header.gsoType) }
            guard header.gsoSize > 0 else { throw .zeroSegmentSize }
        default:
            throw .unsupportedGSOType(header.gsoType)
        }
        guard n >= 1 else { throw .truncatedPacket }
        let version = packet[0] >> 4
        let tcp = gso != VirtioNetHeader.gsoUDPL4
        let proto: UInt8 = tcp ? 6 : 17
        var ipLength: Int
        switch version {
        case 4:
            if gso == VirtioNetHeader.gsoTCPv6 { throw .headerMismatch("gso_type TCPv6 on an IPv4 packet") }
            guard n >= 20 else { throw .truncatedPacket }
            ipLength = Int(packet[0] & 0x0F) * 4
            guard ipLength >= 20 else { throw .headerMismatch("IPv4 header length below 20") }
            guard n >= ipLength else { throw .truncatedPacket }
            guard packet[9] == proto else { throw .headerMismatch(tcp ? "IPv4 protocol is not TCP" : "IPv4 protocol is not UDP") }
            guard packet.be16(6) & 0x3FFF == 0 else { throw .headerMismatch("IPv4 fragment") }
        case 6:
            if gso == VirtioNetHeader.gsoTCPv4 { throw .headerMismatch("gso_type TCPv4 on an IPv6 packet") }
            guard n >= 40 else { throw .truncatedPacket }
            ipLength = 40
            guard packet[6] == proto else {
                throw .headerMismatch(tcp ? "IPv6 next header is not TCP (extension headers unsupported)"
                                          : "IPv6 next header is not UDP (extension headers unsupported)")
            }
        default:
            throw .headerMismatch("IP version is neither 4 nor 6")
        }
        var l4Length = 8
        if tcp {
            guard n >= ipLength + 20 else { throw .truncatedPacket }
            l4Length = Int(packet[ipLength + 12] >> 4) * 4
            guard l4Length >= 20 else { throw .headerMismatch("TCP data offset below 5") }
        }
        let headerLength = ipLength + l4Length
        guard n >= headerLength else { throw .truncatedPacket }
        let payload = n - headerLength
        guard payload > 0 else { throw .headerMismatch("GSO packet without payload") }
        let size = Int(header.gsoSize)
        let count = (payload + size - 1) / size
        guard count <= (tcp ? maxTCPSegments : maxUDPSegments) else { throw .tooManySegments }
        guard headerLength + min(size, payload) <= 65535 else { throw .headerMismatch("segment longer than 65535 bytes") }
        let kind: GSOSplit.Kind = version == 4 ? (tcp ? .tcp4 : .udp4) : (tcp ? .tcp6 : .udp6)
        return GSOSplit(count: count, maxSegmentLength: headerLength + min(size, payload), kind: kind,
                        packetLength: n, ipHeaderLength: ipLength, headerLength: headerLength, gsoSize: size)
    }

    /// Finishes a single-packet split (`count == 1` and not a GSO kind) where it lies: completes
    /// a partial checksum in place, or does nothing. The same bytes `segment(0, …)` would write,
    /// without the copy. Returns false for a split that must be cut (a GSO kind): use `segment`.
    public static func finishInPlace(_ split: GSOSplit, packet: UnsafeMutableRawBufferPointer) -> Bool {
        precondition(packet.count == split.packetLength)
        switch split.kind {
        case .copy:
            return true
        case .completeChecksum:
            let start = split.checksumStart
            var value = ~sum(packet.baseAddress! + start, count: packet.count - start)
            if value == 0 { value = 0xFFFF }  // as in `segment`: RFC 768, CSUM_MANGLED_0
            packet.setBE16(value, at: split.checksumField)
            return true
        case .tcp4, .tcp6, .udp4, .udp6:
            return false
        }
    }

    /// Writes segment `index` (0..<split.count) of `packet`, complete, into `out` and returns its
    /// length. `packet` must be the buffer `plan` was given; `out.count >= split.maxSegmentLength`.
    public static func segment(_ index: Int, of split: GSOSplit, packet: UnsafeRawBufferPointer,
                               into out: UnsafeMutableRawBufferPointer) -> Int {
        precondition(index >= 0 && index < split.count && packet.count == split.packetLength
                     && out.count >= split.maxSegmentLength)
        switch split.kind {
        case .copy:
            out.copyMemory(from: packet)
            return packet.count
        case .completeChecksum:
            let start = split.checksumStart
            if start > 0 { out.baseAddress!.copyMemory(from: packet.baseAddress!, byteCount: start) }
            var value = ~sum(packet.baseAddress! + start, count: packet.count - start, copyingTo: out.baseAddress! + start)
            // RFC 768: a computed 0 is sent as all ones (0 means "no checksum" for UDP/IPv4,
            // and is equivalent for TCP); the kernel's skb_checksum_help stores CSUM_MANGLED_0.
            if value == 0 { value = 0xFFFF }
            out.setBE16(value, at: split.checksumField)
            return packet.count
        case .tcp4, .tcp6, .udp4, .udp6:
            break
        }
        let ip = split.ipHeaderLength
        let h = split.headerLength
        let offset = h + index * split.gsoSize
        let length = min(split.gsoSize, packet.count - offset)
        let total = h + length
        out.baseAddress!.copyMemory(from: packet.baseAddress!, byteCount: h)
        let payloadSum = sum(packet.baseAddress! + offset, count: length, copyingTo: out.baseAddress! + h)
        let v4 = split.kind == .tcp4 || split.kind == .udp4
        if v4 {
            out.setBE16(UInt16(total), at: 2)
            out.setBE16(packet.be16(4) &+ UInt16(truncatingIfNeeded: index), at: 4)
            out.setBE16(0, at: 10)
            out.setBE16(InternetChecksum.checksum(UnsafeRawBufferPointer(rebasing: out[0..<ip])), at: 10)
        } else {
            out.setBE16(UInt16(total - 40), at: 4)
        }
        let l4 = total - ip
        var c = InternetChecksum()
        if v4 {
            c.add(UnsafeRawBufferPointer(rebasing: out[12..<20]))
        } else {
            c.add(UnsafeRawBufferPointer(rebasing: out[8..<40]))
        }
        let checksumField: Int
        if split.kind == .tcp4 || split.kind == .tcp6 {
            c.add(UInt16(6))
            out.setBE32(packet.be32(ip + 4) &+ UInt32(truncatingIfNeeded: index &* split.gsoSize), at: ip + 4)
            var flags = packet[ip + 13]
            if index != split.count - 1 { flags &= ~(0x01 | 0x08) }  // FIN, PSH only on the last
            if index != 0 { flags &= ~0x80 }                        // CWR only on the first
            out[ip + 13] = flags
            checksumField = ip + 16
        } else {
            c.add(UInt16(17))
            out.setBE16(UInt16(l4), at: ip + 4)
            checksumField = ip + 6
        }
        c.add(UInt32(l4))
        out.setBE16(0, at: checksumField)
        c.add(UnsafeRawBufferPointer(rebasing: out[ip..<h]))
        c.add(payloadSum)  // the payload starts at an even offset of the L4 header (IHL×4, 8, data offset×4)
        var value = c.finalized
        if value == 0 && checksumField == ip + 6 { value = 0xFFFF }  // RFC 768
        out.setBE16(value, at: checksumField)
        return total
    }
}
