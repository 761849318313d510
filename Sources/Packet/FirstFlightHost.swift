import Core
/// Where a flow's host name came from.
public enum HostSource: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// The server_name of a TLS ClientHello over TCP.
    case tlsSNI
    /// The Host header of an HTTP/1.x request.
    case httpHost
    /// The server_name of the ClientHello in QUIC Initial packets.
    case quicSNI
    /// A DNS answer the peer received for the destination address.
    case dns

    public var description: String {
        switch self {
        case .tlsSNI: return "tls-sni"
        case .httpHost: return "http-host"
        case .quicSNI: return "quic-sni"
        case .dns: return "dns"
        }
    }
}

/// The host name in a TCP flow's first bytes, whatever the port: a TLS ClientHello's SNI, else an
/// HTTP/1.x Host header. Pure and allocation-free; feed it `FirstFlightBuffer.contiguous`.
public enum FirstFlightHost {
    /// `.found` / `.malformed` / `.needMoreData` of whichever protocol the bytes are, with its
    /// source; `.notPresent` (source nil) when they are neither, or complete without a name.
    public static func find(in bytes: UnsafeRawBufferPointer) -> (HostExtraction, HostSource?) {
        let tls = TLSClientHello.serverName(in: bytes)
        if tls != .notPresent || (!bytes.isEmpty && bytes[0] == 22) { return (tls, tls == .notPresent ? nil : .tlsSNI) }
        let http = HTTPRequestHost.host(in: bytes)
        return (http, http == .notPresent ? nil : .httpHost)
    }
}
