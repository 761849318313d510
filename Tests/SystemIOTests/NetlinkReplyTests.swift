import CMNL
import Glibc
import Testing

@testable import SystemIO

/// Kernel reply buffers built byte by byte (netlink(7); little-endian hosts), around requests
/// built by NetlinkMessage.
private enum Reply {
    static let sequence: UInt32 = 0x5eed_0001
    static let port: UInt32 = 0x4242

    static func u16(_ v: UInt16) -> [UInt8] { withUnsafeBytes(of: v.littleEndian, Array.init) }
    static func u32(_ v: UInt32) -> [UInt8] { withUnsafeBytes(of: v.littleEndian, Array.init) }
    static func padded(_ b: [UInt8]) -> [UInt8] { b + [UInt8](repeating: 0, count: (4 - b.count % 4) % 4) }

    static func message(type: some BinaryInteger, flags: Int = 0, _ payload: [UInt8], sequence: UInt32 = sequence, port: UInt32 = port)
        -> [UInt8]
    {
        padded(u32(UInt32(16 + payload.count)) + u16(UInt16(type)) + u16(UInt16(flags)) + u32(sequence) + u32(port) + payload)
    }

    static func attribute(_ type: some BinaryInteger, _ payload: [UInt8]) -> [UInt8] {
        padded(u16(UInt16(4 + payload.count)) + u16(UInt16(type)) + payload)
    }

    /// The RTM_GETLINK request for tv0 as NetlinkMessage builds it.
    static func getLinkRequest() -> [UInt8] {
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: NetlinkMessage.bufferSize, alignment: 16)
        defer { buffer.deallocate() }
        let nlh = NetlinkMessage.getLink(into: buffer, sequence: sequence, name: "tv0")
        return Array(UnsafeRawBufferPointer(start: nlh, count: Int(nlh.pointee.nlmsg_len)))
    }

    /// NLMSG_ERROR with `code` (0: the acknowledgement) echoing the request's header (NLM_F_CAPPED).
    static func error(_ code: Int32, flags: Int = 0x100, tlvs: [UInt8] = []) -> [UInt8] {
        message(type: NLMSG_ERROR, flags: flags, u32(UInt32(bitPattern: code)) + Array(getLinkRequest()[0..<16]) + tlvs)
    }

    static let ack = error(0)

    /// RTM_NEWLINK for interface `index`: ifinfomsg (ARPHRD_NONE), IFLA_IFNAME, IFLA_MTU (4 bytes
    /// unless `mtuBytes` says otherwise), IFLA_TXQLEN.
    static func newLink(index: Int32, up: Bool, mtu: UInt32, mtuBytes: [UInt8]? = nil, flags: Int = 0) -> [UInt8] {
        let ifFlags = UInt32(up ? IFF_UP | IFF_RUNNING : 0) | UInt32(IFF_NOARP | IFF_POINTOPOINT)
        let ifinfo = [0, 0] + u16(0xfffe) + u32(UInt32(bitPattern: index)) + u32(ifFlags) + u32(0)
        let attrs = attribute(IFLA_IFNAME, Array("tv0".utf8) + [0]) + attribute(IFLA_MTU, mtuBytes ?? u32(mtu))
            + attribute(IFLA_TXQLEN, u32(500))
        return message(type: RTM_NEWLINK, flags: flags, ifinfo + attrs)
    }
}

private func process(_ bytes: [UInt8], sequence: UInt32 = Reply.sequence, port: UInt32 = Reply.port) -> NetlinkReply.Outcome {
    bytes.withUnsafeBytes { NetlinkReply.process($0, sequence: sequence, portID: port) }
}

private func link(_ bytes: [UInt8]) -> (NetlinkReply.Outcome, NetlinkSocket.Link) {
    var link = NetlinkSocket.Link()
    let outcome = bytes.withUnsafeBytes { NetlinkReply.link($0, sequence: Reply.sequence, portID: Reply.port, into: &link) }
    return (outcome, link)
}

@Suite struct NetlinkReplyTests {
    @Test func acknowledgementEndsTheRequest() {
        #expect(process(Reply.ack) == .done)
        #expect(process(Reply.ack, sequence: 0, port: 0) == .done)  // 0 accepts any
    }

    @Test func kernelErrorsCarryTheirErrno() {
        #expect(process(Reply.error(-EEXIST)) == .failed(errno: EEXIST))
        #expect(process(Reply.error(-EPERM)) == .failed(errno: EPERM))
        // Extended ack (NLM_F_ACK_TLVS): the message attribute does not change the outcome.
        let tlvs = Reply.attribute(1, Array("Invalid prefix for given prefix length.".utf8) + [0])
        #expect(process(Reply.error(-EINVAL, flags: 0x300, tlvs: tlvs)) == .failed(errno: EINVAL))
    }

    @Test func anotherRequestOrSocketIsRefused() {
        var otherSequence = Reply.ack
        otherSequence[8] &+= 1
        #expect(process(otherSequence) == .failed(errno: EPROTO))
        var otherPort = Reply.ack
        otherPort[12] &+= 1
        #expect(process(otherPort) == .failed(errno: ESRCH))
    }

    @Test func controlMessagesBeforeTheAckAreSkipped() {
        let noop = Reply.message(type: NLMSG_NOOP, [])
        let overrun = Reply.message(type: NLMSG_OVERRUN, [])
        #expect(process(noop + overrun + Reply.ack) == .done)
        #expect(process(noop) == .more)
        #expect(process([]) == .more)
    }

    @Test func linkReplyFillsTheLink() {
        let (outcome, found) = link(Reply.newLink(index: 7, up: true, mtu: 1420) + Reply.ack)
        #expect(outcome == .done)
        #expect(found == NetlinkSocket.Link(index: 7, mtu: 1420, isUp: true))
        let (down, foundDown) = link(Reply.newLink(index: 12, up: false, mtu: 65535) + Reply.ack)
        #expect(down == .done)
        #expect(foundDown == NetlinkSocket.Link(index: 12, mtu: 65535, isUp: false))
        // The reply may come in its own buffer before the acknowledgement.
        #expect(link(Reply.newLink(index: 7, up: true, mtu: 1420)).0 == .more)
        #expect(link(Reply.error(-ENODEV)).0 == .failed(errno: ENODEV))
    }

    @Test func anMTUOfTheWrongSizeIsIgnored() {
        let (outcome, found) = link(Reply.newLink(index: 7, up: true, mtu: 0, mtuBytes: [5, 0]) + Reply.ack)
        #expect(outcome == .done)
        #expect(found == NetlinkSocket.Link(index: 7, mtu: 0, isUp: true))
    }

    @Test func multipartDumpEndsAtDone() {
        let multi = Int(NLM_F_MULTI)
        let dump = Reply.newLink(index: 1, up: true, mtu: 65536, flags: multi) + Reply.newLink(index: 7, up: true, mtu: 1420, flags: multi)
            + Reply.message(type: NLMSG_DONE, flags: multi, Reply.u32(0))
        let (outcome, found) = link(dump)
        #expect(outcome == .done)
        #expect(found == NetlinkSocket.Link(index: 7, mtu: 1420, isUp: true))
        let interrupted = Reply.newLink(index: 7, up: true, mtu: 1420, flags: multi | Int(NLM_F_DUMP_INTR))
        #expect(link(interrupted).0 == .failed(errno: EINTR))
    }

    /// fuzz/netlink found this: an nlmsg_len of 2³¹ or more passed libmnl's signed check and the
    /// walk jumped far past the buffer (SEGV in mnl_nlmsg_ok).
    @Test func aHugeMessageLengthIsMalformedNotACrash() {
        let input: [UInt8] = [0x24, 0, 0, 0xff, 0, 2, 0, 0, 1, 1, 0, 0xed, 0x5e, 0x42, 0x42, 0, 0, 0xef, 0xff, 0xff, 0xff]
        #expect(process(input, sequence: 0, port: 0) == .failed(errno: EBADMSG))
        var bigAck = Reply.ack
        bigAck[3] = 0x80
        #expect(process(bigAck) == .failed(errno: EBADMSG))
        #expect(link(bigAck).0 == .failed(errno: EBADMSG))
    }

    /// fuzz/netlink found this: an RTM_NEWLINK shorter than its ifinfomsg was read past its end
    /// (heap-buffer-overflow in the link callback at the end of a buffer).
    @Test func aShortLinkMessageIsMalformed() {
        let short = Reply.message(type: RTM_NEWLINK, flags: Int(NLM_F_MULTI), [0, 0, 0, 0])
        #expect(short.count == 20)
        #expect(link(short).0 == .failed(errno: EBADMSG))
        #expect(link(short + Reply.ack).0 == .failed(errno: EBADMSG))
        #expect(process(short + Reply.ack) == .done)  // without the link callback it is skipped
        // Other data messages are not read as links.
        let route = Reply.message(type: RTM_NEWROUTE, [0, 0, 0, 0])
        let (routeOutcome, notALink) = link(route + Reply.ack)
        #expect(routeOutcome == .done)
        #expect(notALink == NetlinkSocket.Link())
    }

    @Test func aTruncatedErrorIsMalformed() {
        // A whole message, but too short for struct nlmsgerr (libmnl's check).
        #expect(process(Reply.message(type: NLMSG_ERROR, Reply.u32(0))) == .failed(errno: EBADMSG))
    }

    /// Every prefix of a link reply and its acknowledgement: whole messages walk, the rest is malformed.
    @Test func everyTruncationOfALinkReply() {
        let first = Reply.newLink(index: 7, up: true, mtu: 1420)
        let whole = first + Reply.ack
        for count in 0...whole.count {
            let prefix = Array(whole[0..<count])
            let (outcome, _) = link(prefix)
            switch count {
            case 0, first.count: #expect(outcome == .more, "prefix \(count)")
            case whole.count: #expect(outcome == .done, "prefix \(count)")
            default: #expect(outcome == .failed(errno: EBADMSG), "prefix \(count)")
            }
        }
    }

    @Test func framing() {
        let header = Reply.message(type: NLMSG_NOOP, [])
        #expect(header.withUnsafeBytes(NetlinkReply.isFramed))
        // The last message's padding may be absent: nlmsg_len 17 in 17 or 20 bytes, not 21.
        var odd = header + [9]
        odd[0] = 17
        #expect(odd.withUnsafeBytes(NetlinkReply.isFramed))
        #expect((odd + [0, 0, 0]).withUnsafeBytes(NetlinkReply.isFramed))
        #expect(!(odd + [0, 0, 0, 0]).withUnsafeBytes(NetlinkReply.isFramed))
        var tooShort = header
        tooShort[0] = 15
        #expect(!tooShort.withUnsafeBytes(NetlinkReply.isFramed))
        #expect(!Array(header[0..<15]).withUnsafeBytes(NetlinkReply.isFramed))
    }
}
