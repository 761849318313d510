import Core
/// Why a packet could not be parsed, or why no reply can be built for it.
///
/// Every malformed or truncated input maps to one of these cases; the parser never traps.
/// The `Int` payloads are byte offsets or lengths in the packet, so a log line can say where.
public enum PacketError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The buffer is empty.
    case empty
    /// The version nibble is neither 4 nor 6.
    case unsupportedVersion(UInt8)
    /// The buffer ends before a header that must be there (`needed` bytes from the start, `have`).
    case truncated(needed: Int, have: Int)
    /// IPv4 IHL below 5 (20 bytes) or beyond the packet.
    case badHeaderLength(Int)
    /// IPv4 total length (or IPv6 payload length + 40) smaller than the headers or larger than
    /// the buffer.
    case badTotalLength(Int)
    /// TCP data offset below 5 or beyond the packet.
    case badDataOffset(Int)
    /// UDP length field smaller than 8 or larger than the IP payload.
    case badUDPLength(Int)
    /// The IPv6 extension-header chain is longer than `PacketParser.maxExtensionHeaders` or a
    /// header that may appear once (hop-by-hop not first, two fragment headers) repeats.
    case badExtensionChain(offset: Int)
    /// A fragment whose offset plus length runs past 65535, the largest datagram it can be part
    /// of (RFC 791 §3.2, RFC 8200 §4.5).
    case badFragment
    /// IPv6 jumbograms (payload length 0 with a Jumbo Payload option) are not supported.
    case jumbogram
    /// The reply builder was given an output buffer that cannot hold the reply.
    case bufferTooSmall(needed: Int)
    /// RFC 9293 §3.10.7.1 / RFC 1122 §3.2.2 / RFC 4443 §2.4(e): this packet must not be answered
    /// (a RST, an ICMP error, a non-first fragment, a multicast/broadcast/unspecified source…).
    case mustNotAnswer(String)

    public var description: String {
        switch self {
        case .empty: return "empty packet"
        case .unsupportedVersion(let v): return "IP version \(v) is not 4 or 6"
        case .truncated(let n, let h): return "truncated: need \(n) bytes, have \(h)"
        case .badHeaderLength(let n): return "bad IPv4 header length \(n) bytes"
        case .badTotalLength(let n): return "bad IP total length \(n)"
        case .badDataOffset(let n): return "bad TCP data offset \(n) bytes"
        case .badUDPLength(let n): return "bad UDP length \(n)"
        case .badExtensionChain(let o): return "bad IPv6 extension header chain at byte \(o)"
        case .badFragment: return "bad fragment offset/length"
        case .jumbogram: return "IPv6 jumbograms are not supported"
        case .bufferTooSmall(let n): return "output buffer too small: need \(n) bytes"
        case .mustNotAnswer(let why): return "must not answer: \(why)"
        }
    }
}
