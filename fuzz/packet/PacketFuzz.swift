// libFuzzer harness for the Packet module: parser, flow key, reply builders, flow table.
// Built together with Sources/Packet/*.swift into one module (see README.md); a crash, an
// AddressSanitizer report or a failed precondition below is a bug.

nonisolated(unsafe) let fuzzTable = FlowTable(capacity: 64)
nonisolated(unsafe) let fuzzFragments = FragmentTracker(slots: 8)
nonisolated(unsafe) var fuzzClock: Int64 = 0
nonisolated(unsafe) let replyBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1500, alignment: 16)

@_cdecl("LLVMFuzzerTestOneInput")
public func packetFuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    // Copy into an exactly sized allocation so ASan catches any read past the end.
    let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 1)
    defer { copy.deallocate() }
    if let data, size > 0 { copy.copyMemory(from: UnsafeRawBufferPointer(start: data, count: size)) }
    let bytes = UnsafeRawBufferPointer(copy)

    // The raw input as a first TCP payload too.
    checkHost(TLSClientHello.serverName(in: bytes), bytes)
    checkHost(HTTPRequestHost.host(in: bytes), bytes)

    if let q = try? PacketParser.parseQuoted(bytes) { checkOffsets(q, size) }

    var p: ParsedPacket
    do { p = try PacketParser.parse(bytes) } catch { return 0 }
    checkOffsets(p, size)
    if p.isICMPError, let q = try? PacketParser.parseQuoted(UnsafeRawBufferPointer(rebasing: bytes[p.payloadOffset..<p.totalLength])) {
        checkOffsets(q, p.totalLength - p.payloadOffset)
        _ = q.flowKey
    }

    fuzzClock &+= Int64(size) * 97
    let original = p
    if fuzzFragments.resolve(&p, now: fuzzClock) == false { precondition(p == original) }
    if p.proto == .tcp && p.hasTransportHeader {
        let payload = UnsafeRawBufferPointer(rebasing: bytes[p.payloadOffset..<p.totalLength])
        checkHost(TLSClientHello.serverName(in: payload), payload)
        checkHost(HTTPRequestHost.host(in: payload), payload)
    }
    let (key, reversed) = p.flowKey
    let r = fuzzTable.track(key, reversed: reversed, length: p.totalLength, tcpFlags: p.tcpFlags, now: fuzzClock)
    precondition(fuzzTable[r.handle].key == key)
    if size % 7 == 0 { fuzzTable.expire(now: fuzzClock, budget: 16) }

    if let n = try? ReplyBuilder.tcpReset(answering: bytes, parsed: p, into: replyBuffer) {
        let reply = try! PacketParser.parse(UnsafeRawBufferPointer(rebasing: replyBuffer[0..<n]))
        precondition(reply.proto == .tcp && reply.tcpFlags.contains(.rst) && reply.destinationPort == p.sourcePort)
        precondition(transportChecksumVerifies(reply, UnsafeRawBufferPointer(rebasing: replyBuffer[0..<n])))
    }
    for reason in [UnreachableReason.portUnreachable, .administrativelyProhibited] {
        if let n = try? ReplyBuilder.unreachable(answering: bytes, parsed: p, reason: reason, into: replyBuffer) {
            precondition(n <= (p.version == 4 ? 576 : 1280))
            let reply = try! PacketParser.parse(UnsafeRawBufferPointer(rebasing: replyBuffer[0..<n]))
            precondition(reply.icmpType == (p.version == 4 ? 3 : 1) && reply.destination == p.source)
            precondition(transportChecksumVerifies(reply, UnsafeRawBufferPointer(rebasing: replyBuffer[0..<n])))
        }
    }
    return 0
}

func checkOffsets(_ p: ParsedPacket, _ size: Int) {
    precondition(p.version == 4 || p.version == 6)
    precondition(p.transportOffset <= p.payloadOffset && p.payloadOffset <= p.totalLength && p.totalLength <= size)
}

func checkHost(_ r: HostExtraction, _ b: UnsafeRawBufferPointer) {
    if case .found(let range) = r {
        precondition(range.lowerBound >= 0 && range.upperBound <= b.count && !range.isEmpty)
        precondition(HostExtraction.isValidHostName(UnsafeRawBufferPointer(rebasing: b[range])))
    }
}

func transportChecksumVerifies(_ p: ParsedPacket, _ b: UnsafeRawBufferPointer) -> Bool {
    var c = InternetChecksum()
    if p.proto != .icmp {
        c.addPseudoHeader(source: p.source, destination: p.destination, proto: p.proto, length: p.totalLength - p.transportOffset)
    }
    c.add(UnsafeRawBufferPointer(rebasing: b[p.transportOffset..<p.totalLength]))
    return c.folded == 0xFFFF
}
