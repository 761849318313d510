// libFuzzer harness for TUN offload: VirtioNetHeader, GSOSegmenter, TUNCoalescer. Built
// together with Sources/Packet/*.swift into one module (see README.md). Input: 10 bytes of
// virtio_net_hdr, then the packet; or FF FF then a batch of packets for the coalescer alone
// (see `coalesceBatch`). Whatever plan accepts must segment within bounds into
// packets whose lengths add up; GSO segments must carry valid checksums; and the segments,
// coalesced and split again, must come back byte for byte. A crash, an AddressSanitizer report
// or a failed precondition is a bug.

nonisolated(unsafe) let segmentArena = UnsafeMutableRawBufferPointer.allocate(byteCount: 70_000 * 2, alignment: 16)
nonisolated(unsafe) let wireBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 70_000, alignment: 16)
nonisolated(unsafe) let resplitBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 70_000, alignment: 16)
nonisolated(unsafe) let batch = UnsafeMutablePointer<UnsafeMutableRawBufferPointer>.allocate(capacity: GSOSegmenter.maxTCPSegments)
nonisolated(unsafe) let coalescer = TUNCoalescer(capacity: GSOSegmenter.maxTCPSegments)

@_cdecl("LLVMFuzzerTestOneInput")
public func offloadFuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    // Copy into an exactly sized allocation so ASan catches any read past the end.
    let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 1)
    defer { copy.deallocate() }
    if let data, size > 0 { copy.copyMemory(from: UnsafeRawBufferPointer(start: data, count: size)) }
    let bytes = UnsafeRawBufferPointer(copy)

    if size >= 2 && bytes[0] == 0xFF && bytes[1] == 0xFF {
        coalesceBatch(UnsafeRawBufferPointer(rebasing: bytes[2...]))
        return 0
    }
    let header: VirtioNetHeader
    do throws(OffloadError) { header = try VirtioNetHeader(bytes) } catch {
        precondition(size < VirtioNetHeader.size)
        return 0
    }
    let back = UnsafeMutableRawBufferPointer.allocate(byteCount: VirtioNetHeader.size, alignment: 1)
    defer { back.deallocate() }
    header.write(to: back.baseAddress!)
    precondition(back.elementsEqual(bytes[0..<VirtioNetHeader.size]))

    let packet = UnsafeRawBufferPointer(rebasing: bytes[VirtioNetHeader.size...])
    let split: GSOSplit
    do throws(OffloadError) { split = try GSOSegmenter.plan(header, packet: packet) } catch { return 0 }
    precondition(split.count >= 1 && split.maxSegmentLength <= max(packet.count, 65535))

    // Segments, each in an exactly sized buffer.
    var offset = 0
    var fits = true  // all segments fit the arena's first half: coalesce them below
    var payload = 0
    for i in 0..<split.count {
        let out = UnsafeMutableRawBufferPointer.allocate(byteCount: split.maxSegmentLength, alignment: 1)
        defer { out.deallocate() }
        let n = GSOSegmenter.segment(i, of: split, packet: packet, into: out)
        precondition(n <= split.maxSegmentLength)
        if split.count > 1 || split.headerLength > 0 {
            precondition(n > split.headerLength)
            payload += n - split.headerLength
            verifyChecksums(UnsafeRawBufferPointer(rebasing: out[0..<n]), ip: split.ipHeaderLength)
        }
        if fits && split.headerLength > 0 && offset + n <= segmentArena.count / 2 {
            let slot = UnsafeMutableRawBufferPointer(rebasing: segmentArena[offset..<(offset + n)])
            slot.copyMemory(from: UnsafeRawBufferPointer(rebasing: out[0..<n]))
            batch[i] = slot
            offset += n
        } else {
            fits = false
        }
    }
    guard split.headerLength > 0 else { return 0 }
    precondition(payload == packet.count - split.headerLength)
    guard fits else { return 0 }

    // Coalesce the segments (a pristine copy kept in the arena's second half) and split each group again.
    let pristine = UnsafeMutableRawBufferPointer(rebasing: segmentArena[(segmentArena.count / 2)...])
    pristine.copyMemory(from: UnsafeRawBufferPointer(rebasing: segmentArena[0..<offset]))
    let groups = coalescer.coalesce(batch, count: split.count, allowUDP: true)
    var seen = 0
    for g in 0..<groups {
        let h = coalescer.header(ofGroup: g)
        let members = coalescer.members(ofGroup: g)
        let skip = coalescer.skip(ofGroup: g)
        var n = 0
        for (k, m) in members.enumerated() {
            precondition(Int(m) == seen)  // segments of one flow, in order
            seen += 1
            let p = batch[Int(m)]
            let from = k == 0 ? 0 : skip
            (wireBuffer.baseAddress! + n).copyMemory(from: p.baseAddress! + from, byteCount: p.count - from)
            n += p.count - from
        }
        let wire = UnsafeRawBufferPointer(rebasing: wireBuffer[0..<n])
        let again = try! GSOSegmenter.plan(h, packet: wire)
        precondition(again.count == members.count)
        for (k, m) in members.enumerated() {
            let len = GSOSegmenter.segment(k, of: again, packet: wire, into: resplitBuffer)
            let start = batch[Int(m)].baseAddress! - segmentArena.baseAddress!
            let original = UnsafeRawBufferPointer(rebasing: pristine[start..<(start + batch[Int(m)].count)])
            precondition(UnsafeRawBufferPointer(rebasing: resplitBuffer[0..<len]).elementsEqual(original))
        }
    }
    precondition(seen == split.count)
    return 0
}

/// IPv4 header checksum and TCP/UDP checksum (with pseudo-header) of a GSO segment verify.
func verifyChecksums(_ s: UnsafeRawBufferPointer, ip: Int) {
    var c = InternetChecksum()
    if s[0] >> 4 == 4 {
        precondition(InternetChecksum.checksum(UnsafeRawBufferPointer(rebasing: s[0..<ip])) == 0)
        c.add(UnsafeRawBufferPointer(rebasing: s[12..<20]))
        c.add(UInt16(s[9]))
    } else {
        c.add(UnsafeRawBufferPointer(rebasing: s[8..<40]))
        c.add(UInt16(s[6]))
    }
    c.add(UInt32(s.count - ip))
    c.add(UnsafeRawBufferPointer(rebasing: s[ip...]))
    precondition(c.folded == 0xFFFF)
}

nonisolated(unsafe) let batchCoalescer = TUNCoalescer(capacity: 64)
/// Multi-member groups checked so far (a replay driver prints it to show the seeds coalesce).
nonisolated(unsafe) var mergedGroupsChecked = 0
nonisolated(unsafe) let batchPackets = UnsafeMutablePointer<UnsafeMutableRawBufferPointer>.allocate(capacity: 64)

/// Batch mode: a flags byte (bit 0: allow UDP; bit 1: after the first packet, repeat it with
/// consecutive ID/sequence instead of reading more), then packets as [u16 big-endian length]
/// [bytes], at most 64, each copied into an exactly sized buffer. Every packet must be in exactly
/// one group, groups ordered by first member, single packets untouched, and every multi-member
/// group, gathered as the writev would, must split back into its packets byte for byte.
func coalesceBatch(_ input: UnsafeRawBufferPointer) {
    guard input.count >= 1 else { return }
    let flags = input[0]
    var at = 1
    var count = 0
    while count < 64 && at + 2 <= input.count {
        let n = min(Int(input[at]) << 8 | Int(input[at + 1]), input.count - at - 2)
        let b = UnsafeMutableRawBufferPointer.allocate(byteCount: n, alignment: 1)
        if n > 0 { b.copyMemory(from: UnsafeRawBufferPointer(rebasing: input[(at + 2)..<(at + 2 + n)])) }
        batchPackets[count] = b
        count += 1
        at += 2 + n
    }
    if flags & 2 != 0 && count == 1 {
        // Make a run of "next" packets from the first (likely coalescable when it is valid).
        let first = UnsafeRawBufferPointer(batchPackets[0])
        let ip = first.count >= 1 && first[0] >> 4 == 6 ? 40 : 20
        while count < 64 && first.count >= ip + 20 {
            let b = UnsafeMutableRawBufferPointer.allocate(byteCount: first.count, alignment: 1)
            b.copyMemory(from: first)
            let proto = ip == 20 ? first[9] : first[6]
            let payload = first.count - ip - (proto == 17 ? 8 : Int(first[ip + 12] >> 4) * 4)
            var c = InternetChecksum()
            if ip == 20 {
                b.setBE16(first.be16(4) &+ UInt16(count), at: 4)
                b.setBE16(0, at: 10)
                b.setBE16(InternetChecksum.checksum(UnsafeRawBufferPointer(rebasing: b[0..<20])), at: 10)
                c.add(UnsafeRawBufferPointer(rebasing: b[12..<20]))
                c.add(UInt16(b[9]))
            } else {
                c.add(UnsafeRawBufferPointer(rebasing: b[8..<40]))
                c.add(UInt16(b[6]))
            }
            let tcp = proto == 6
            if tcp { b.setBE32(first.be32(ip + 4) &+ UInt32(truncatingIfNeeded: count &* max(payload, 0)), at: ip + 4) }
            let field = ip + (tcp ? 16 : 6)
            b.setBE16(0, at: field)
            c.add(UInt32(b.count - ip))
            c.add(UnsafeRawBufferPointer(rebasing: b[ip...]))
            b.setBE16(c.finalized == 0 && !tcp ? 0xFFFF : c.finalized, at: field)
            batchPackets[count] = b
            count += 1
        }
    }
    defer { for i in 0..<count { batchPackets[i].deallocate() } }
    // Originals, back to back in the arena.
    var offsets = (0, [Int]())
    offsets.1.reserveCapacity(count)
    for i in 0..<count {
        let p = batchPackets[i]
        guard offsets.0 + p.count <= segmentArena.count else { return }
        (segmentArena.baseAddress! + offsets.0).copyMemory(from: p.baseAddress!, byteCount: p.count)
        offsets.1.append(offsets.0)
        offsets.0 += p.count
    }
    func original(_ i: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: segmentArena[offsets.1[i]..<(offsets.1[i] + batchPackets[i].count)])
    }
    let groups = batchCoalescer.coalesce(batchPackets, count: count, allowUDP: flags & 1 != 0)
    var seen = [Bool](repeating: false, count: count)
    var lastFirst = -1
    for g in 0..<groups {
        let members = batchCoalescer.members(ofGroup: g)
        let h = batchCoalescer.header(ofGroup: g)
        precondition(!members.isEmpty && members.count <= TUNCoalescer.maxMembers && Int(members[0]) > lastFirst)
        lastFirst = Int(members[0])
        for m in members { precondition(!seen[Int(m)]); seen[Int(m)] = true }
        if members.count == 1 {
            precondition(h == VirtioNetHeader())
            precondition(UnsafeRawBufferPointer(batchPackets[Int(members[0])]).elementsEqual(original(Int(members[0]))))
            continue
        }
        mergedGroupsChecked += 1
        let skip = batchCoalescer.skip(ofGroup: g)
        var n = 0
        for (k, m) in members.enumerated() {
            let p = batchPackets[Int(m)]
            let from = k == 0 ? 0 : skip
            precondition(n + p.count - from <= wireBuffer.count)
            (wireBuffer.baseAddress! + n).copyMemory(from: p.baseAddress! + from, byteCount: p.count - from)
            n += p.count - from
        }
        precondition(n <= 65535)
        let wire = UnsafeRawBufferPointer(rebasing: wireBuffer[0..<n])
        let split = try! GSOSegmenter.plan(h, packet: wire)
        precondition(split.count == members.count)
        for (k, m) in members.enumerated() {
            let len = GSOSegmenter.segment(k, of: split, packet: wire, into: resplitBuffer)
            precondition(UnsafeRawBufferPointer(rebasing: resplitBuffer[0..<len]).elementsEqual(original(Int(m))))
        }
    }
    precondition(!seen.contains(false))
}
