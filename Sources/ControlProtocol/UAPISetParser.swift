import Core
/// The `set=1` parser fed one line at a time, so a request of many MiB is
/// never held as text: only the parsed `UAPISetRequest` grows (a 100,000-prefix `allowed_ip`
/// list is about 3 MiB of text but ~2.4 MiB of prefixes). Same rules as `UAPICodec.parseSet`,
/// which is built on it: device keys until the first `public_key`, then peer keys.
public struct UAPISetParser: Sendable {
    private var request = UAPISetRequest()
    private var peer: UAPIPeerUpdate?
    /// Lines fed so far.
    public private(set) var lineCount = 0

    /// An empty parser.
    public init() {}

    /// Parses one line (without its `\n`).
    /// - Throws: `UAPIError` with `EPROTO` for a line without `=`, `EINVAL` for an unknown key
    ///   or a bad value. The parser must not be fed further after a throw.
    public mutating func feed<S: StringProtocol>(_ raw: S) throws(UAPIError) {
        lineCount += 1
        guard let eq = raw.firstIndex(of: "=") else {
            throw .protocolError("line '\(raw.prefix(80))' is not key=value")
        }
        let key = String(raw[..<eq])
        let value = String(raw[raw.index(after: eq)...])
        if key == "public_key" {
            if let p = peer { request.peers.append(p) }
            guard let k = WireGuardKey(hex: value) else { throw .invalid("public_key: '\(value.prefix(80))' is not 64 hex digits") }
            peer = UAPIPeerUpdate(publicKey: k)
            return
        }
        if peer != nil {
            try UAPICodec.applyPeer(key, value, &peer!)
        } else {
            try UAPICodec.applyDevice(key, value, &request)
        }
    }

    /// The request parsed so far (the last peer included).
    public mutating func finish() -> UAPISetRequest {
        if let p = peer { request.peers.append(p) }
        peer = nil
        return request
    }
}
