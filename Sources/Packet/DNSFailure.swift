import Core
/// Why a DNS message gave no answers: one countable reason per way a message can be broken or
/// out of scope (the daemon keeps a counter per case, indexed by `rawValue`).
public enum DNSFailure: UInt8, CaseIterable, Sendable, CustomStringConvertible {
    /// The message ends inside the header, a name, a fixed field or a record's data (and the
    /// header's TC bit does not say so).
    case truncated
    /// QR is 0 (a query, not a response) or the opcode is not QUERY (RFC 1035 §4.1.1).
    case notResponse
    /// QDCOUNT is not 1: we cannot tell which name the answers belong to.
    case questionCount
    /// A compression pointer that does not point strictly backwards, or too many pointers in
    /// one name (RFC 1035 §4.1.4; a forward or self pointer could loop).
    case compressionLoop
    /// A compression pointer past the end of the message.
    case pointerOutOfBounds
    /// A label type other than a plain label or a pointer (0x40, 0x80: RFC 6891 §5).
    case badLabel
    /// A name longer than 255 bytes on the wire (RFC 1035 §2.3.4).
    case nameTooLong
    /// An A record whose data is not 4 bytes, an AAAA not 16, or a CNAME whose data is not
    /// exactly one name.
    case badRecordData
    /// RCODE is not NOERROR (NXDOMAIN, SERVFAIL, REFUSED, …): a valid answer without addresses.
    case errorResponse
    /// A DNS-over-TCP payload whose 2-byte length prefix promises more bytes than it holds, or
    /// that is shorter than the prefix (RFC 1035 §4.2.2): reassemble and try again.
    case incompleteTCP

    /// The counter name (`dns-truncated`, …).
    public var description: String {
        switch self {
        case .truncated: return "truncated"
        case .notResponse: return "not-a-response"
        case .questionCount: return "question-count"
        case .compressionLoop: return "compression-loop"
        case .pointerOutOfBounds: return "pointer-out-of-bounds"
        case .badLabel: return "bad-label"
        case .nameTooLong: return "name-too-long"
        case .badRecordData: return "bad-record-data"
        case .errorResponse: return "error-response"
        case .incompleteTCP: return "incomplete-tcp"
        }
    }
}
