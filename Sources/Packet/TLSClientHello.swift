import Core
/// Finds the server name (SNI, RFC 6066 §3) in a TLS ClientHello (RFC 8446 §4.1.2, RFC 5246
/// §7.4.1.2) at the start of a TCP payload. Pure and bounded: it reads only the bytes given,
/// never past a length field, and allocates nothing.
///
/// A ClientHello larger than one segment (common with post-quantum key shares) is parsed as far
/// as the bytes go: the name is found if it lies in them, else `.needMoreData`; a
/// `FirstFlightBuffer` reassembles split and out-of-order segments for it. `serverName(in:)`
/// reads the first TLS record only; `serverName(acrossRecords:scratch:)` joins a ClientHello
/// fragmented over several records (what `FirstFlightHost` uses when the first record ends early).
///
/// GREASE values (RFC 8701) in cipher suites and extensions are skipped like any unknown value.
/// With Encrypted Client Hello (draft-ietf-tls-esni) the name found is the *outer* SNI, the
/// client-facing server's public name: the real name is encrypted and not visible to us.
public enum TLSClientHello {
    /// Looks for the SNI host name in `payload`.
    public static func serverName(in payload: UnsafeRawBufferPointer) -> HostExtraction {
        let n = payload.count
        if n == 0 { return .needMoreData }
        guard payload[0] == 22 else { return .notPresent }  // handshake record
        if n < 3 { return .needMoreData }
        guard payload[1] == 3, payload[2] <= 4 else { return .notPresent }  // TLS 1.0...1.3 record versions
        if n < 6 { return .needMoreData }
        let recordLength = Int(payload.be16(3))
        guard recordLength >= 4 else { return .malformed }
        guard payload[5] == 1 else { return .notPresent }  // not a ClientHello
        // Everything below stays inside the record and the handshake message.
        return handshake(payload, at: 5, end: min(n, 5 + recordLength), recordComplete: n >= 5 + recordLength)
    }

    /// Looks for the SNI host name in a ClientHello that may be fragmented over several TLS
    /// records (RFC 8446 §5.1 allows it; anti-censorship tools do it on purpose to hide the SNI
    /// from a reader of the first record). The handshake bytes of the consecutive handshake
    /// records at the start of `stream` are joined into `scratch` and read there: a `.found`
    /// range indexes `joined`, the returned bytes (inside `scratch`). A ClientHello in one
    /// record gives the same answer as `serverName(in:)`. Allocates nothing.
    public static func serverName(acrossRecords stream: UnsafeRawBufferPointer, scratch: UnsafeMutableRawBufferPointer)
        -> (HostExtraction, joined: UnsafeRawBufferPointer)
    {
        let n = stream.count
        let none = UnsafeRawBufferPointer(start: scratch.baseAddress, count: 0)
        if n == 0 { return (.needMoreData, none) }
        guard stream[0] == 22, n < 2 || stream[1] == 3, n < 3 || stream[2] <= 4 else { return (.notPresent, none) }
        if n < 5 { return (.needMoreData, none) }
        var i = 0
        var out = 0
        while i + 5 <= n {
            guard stream[i] == 22, stream[i + 1] == 3, stream[i + 2] <= 4 else { break }  // the handshake records ended
            let length = Int(stream.be16(i + 3))
            let take = min(length, n - i - 5, scratch.count - out)
            if take > 0 {
                (scratch.baseAddress! + out).copyMemory(from: stream.baseAddress! + i + 5, byteCount: take)
                out += take
            }
            if i + 5 + length > n || out == scratch.count { break }
            i += 5 + length
        }
        let joined = UnsafeRawBufferPointer(start: scratch.baseAddress, count: out)
        return (serverName(inHandshake: joined), joined)
    }

    /// Looks for the SNI host name in a ClientHello handshake message (RFC 8446 §4: type 1, a
    /// 3-byte length, the body) at the start of `stream` without a record header: the CRYPTO
    /// stream of a QUIC Initial (RFC 9001 §4.1.3). `.needMoreData` while the message is cut short.
    public static func serverName(inHandshake stream: UnsafeRawBufferPointer) -> HostExtraction {
        let n = stream.count
        if n == 0 { return .needMoreData }
        guard stream[0] == 1 else { return .notPresent }
        return handshake(stream, at: 0, end: n, recordComplete: nil)
    }

    /// The ClientHello at `hs` (its type byte, already checked), read up to `end`. In a record,
    /// `recordComplete` says whether the whole record is in (then a field cut short is
    /// malformed); without one (nil) the message's own length says when it is complete.
    static func handshake(_ payload: UnsafeRawBufferPointer, at hs: Int, end recordEnd: Int, recordComplete: Bool?) -> HostExtraction {
        var end = recordEnd
        if end < hs + 4 { return .needMoreData }
        let helloLength = Int(payload[hs + 1]) << 16 | Int(payload.be16(hs + 2))
        let complete = recordComplete.map { $0 && recordEnd >= hs + 4 + helloLength } ?? (recordEnd >= hs + 4 + helloLength)
        end = min(end, hs + 4 + helloLength)
        var i = hs + 4
        // legacy_version (2), random (32)
        i += 34
        // legacy_session_id
        guard i < end else { return complete ? .malformed : .needMoreData }
        let sessionLength = Int(payload[i])
        guard sessionLength <= 32 else { return .malformed }
        i += 1 + sessionLength
        // cipher_suites
        guard i + 2 <= end else { return complete ? .malformed : .needMoreData }
        let suitesLength = Int(payload.be16(i))
        guard suitesLength >= 2, suitesLength % 2 == 0 else { return .malformed }
        i += 2 + suitesLength
        // legacy_compression_methods
        guard i < end else { return complete ? .malformed : .needMoreData }
        i += 1 + Int(payload[i])
        // extensions (absent in very old ClientHellos: then there is no SNI)
        if i == end && complete { return .notPresent }
        guard i + 2 <= end else { return complete ? .malformed : .needMoreData }
        let extensionsEnd = i + 2 + Int(payload.be16(i))
        i += 2
        if complete && extensionsEnd > end { return .malformed }
        while i < extensionsEnd {
            guard i + 4 <= end else { return complete ? .malformed : .needMoreData }
            let type = payload.be16(i)
            let length = Int(payload.be16(i + 2))
            let body = i + 4
            guard body + length <= extensionsEnd else { return .malformed }
            if type == 0 {  // server_name
                guard body + length <= end else { return complete ? .malformed : .needMoreData }
                return serverNameExtension(payload, body, body + length)
            }
            i = body + length
        }
        return .notPresent
    }

    /// The ServerNameList of RFC 6066 §3: the first `host_name` entry.
    static func serverNameExtension(_ p: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> HostExtraction {
        guard start + 2 <= end else { return .malformed }
        let listEnd = start + 2 + Int(p.be16(start))
        guard listEnd <= end else { return .malformed }
        var i = start + 2
        while i + 3 <= listEnd {
            let nameType = p[i]
            let length = Int(p.be16(i + 1))
            let name = i + 3
            guard name + length <= listEnd else { return .malformed }
            if nameType == 0 {
                let bytes = UnsafeRawBufferPointer(rebasing: p[name..<(name + length)])
                return HostExtraction.isValidHostName(bytes) ? .found(name..<(name + length)) : .malformed
            }
            i = name + length
        }
        return .notPresent
    }
}
