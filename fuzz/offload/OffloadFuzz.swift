// libFuzzer harness for TUN offload: VirtioNetHeader, GSOSegmenter, TUNCoalescer. Built
// together with Sources/Packet/*.swift into one module (see README.md). Input: 10 bytes of
// virtio_net_hdr, then the packet. Whatever plan accepts must segment within bounds into
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
        if split.headerLength > 0 && offset + n <= segmentArena.count / 2 && split.count <= GSOSegmenter.maxTCPSegments {
            let slot = UnsafeMutableRawBufferPointer(rebasing: segmentArena[offset..<(offset + n)])
            slot.copyMemory(from: UnsafeRawBufferPointer(rebasing: out[0..<n]))
            batch[i] = slot
            offset += n
        } else {
            offset = -1_000_000
        }
    }
    guard split.headerLength > 0 else { return 0 }
    precondition(payload == packet.count - split.headerLength)
    guard offset > 0 else { return 0 }

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
