import Core
/// What one UDP datagram taught a `QUICInitialReader` about a flow's host name.
public enum QUICInitialOutcome: Equatable, Sendable {
    /// One or more client Initial packets decrypted; their CRYPTO data is in the flow's
    /// `FirstFlightBuffer`, and this is what `TLSClientHello.serverName(inHandshake:)` says of it
    /// (`.found` ranges index `FirstFlightBuffer.contiguous`; `.needMoreData`: the ClientHello
    /// continues in a later Initial).
    case clientHello(HostExtraction)
    /// No Initial packet in the datagram: a short-header packet, a Handshake/0-RTT/Retry packet,
    /// Version Negotiation, or not QUIC at all. Nothing to learn from it.
    case notInitial
    /// A long-header packet of a version we cannot read (neither v1 nor v2).
    case unsupportedVersion(UInt32)
    /// An Initial of v1/v2 that could not be read, for this reason (count it).
    case failed(QUICFailure)
}
