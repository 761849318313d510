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

/// The host name in a TCP flow's first bytes, whatever the port: a TLS ClientHello's SNI (also
/// when the ClientHello is fragmented over several TLS records), else an HTTP/1.x Host header.
/// Pure and allocation-free; feed it `FirstFlightBuffer.contiguous`.
public enum FirstFlightHost {
    /// What `find` saw.
    public struct Result {
        /// `.found` / `.malformed` / `.needMoreData` of whichever protocol the bytes are;
        /// `.notPresent` when they are neither, or complete without a name.
        public var extraction: HostExtraction
        /// Which protocol; nil with `.notPresent`.
        public var source: HostSource?
        /// The bytes a `.found` range indexes: the input, or the joined records in `scratch`.
        public var bytes: UnsafeRawBufferPointer

        /// The name, lower-cased (allocates: once per flow).
        public var lowercasedHost: String? { extraction.lowercasedHost(in: bytes) }
    }

    /// Looks at `bytes`; `scratch` (at least the reassembly bound, 16 KiB, preallocated by the
    /// caller) receives the joined handshake bytes of a ClientHello fragmented over records.
    public static func find(in bytes: UnsafeRawBufferPointer, scratch: UnsafeMutableRawBufferPointer) -> Result {
        let tls = TLSClientHello.serverName(in: bytes)
        if tls == .needMoreData || tls == .malformed, bytes.count >= 5, bytes[0] == 22,
           bytes.count >= 5 + Int(bytes.be16(3)) || bytes.be16(3) < 4
        {
            // The first record ends before the ClientHello does (or is too short to hold its
            // header) and more records follow: join them.
            let (joined, view) = TLSClientHello.serverName(acrossRecords: bytes, scratch: scratch)
            return Result(extraction: joined, source: joined == .notPresent ? nil : .tlsSNI, bytes: view)
        }
        if tls != .notPresent || (!bytes.isEmpty && bytes[0] == 22) {
            return Result(extraction: tls, source: tls == .notPresent ? nil : .tlsSNI, bytes: bytes)
        }
        let http = HTTPRequestHost.host(in: bytes)
        return Result(extraction: http, source: http == .notPresent ? nil : .httpHost, bytes: bytes)
    }
}
