import Core
import Packet

/// Text codec of the WireGuard cross-platform configuration protocol
/// (https://www.wireguard.com/xplatform/#configuration-protocol): `key=value` lines, keys
/// hex-encoded, an operation ended by a blank line. Pure: strings in, values out.
public enum UAPICodec {
    /// The body of a `get=1` reply in the order wireguard-go writes it (`private_key`,
    /// `listen_port`, `fwmark`, then per peer `public_key`, `preshared_key`,
    /// `protocol_version`, `endpoint`, `last_handshake_time_sec`/`_nsec`, `tx_bytes`,
    /// `rx_bytes`, `persistent_keepalive_interval`, `allowed_ip`…), each line ending in `\n`.
    /// The caller appends `errno=0\n\n`.
    public static func encodeGet(_ device: UAPIDeviceSnapshot) -> String {
        var s = ""
        if let k = device.privateKey, !k.isZero { s += "private_key=\(k.hex)\n" }
        if device.listenPort != 0 { s += "listen_port=\(device.listenPort)\n" }
        if device.fwmark != 0 { s += "fwmark=\(device.fwmark)\n" }
        let zero = String(repeating: "0", count: 64)
        for p in device.peers {
            s += "public_key=\(p.publicKey.hex)\n"
            s += "preshared_key=\(p.presharedKey?.hex ?? zero)\n"
            s += "protocol_version=1\n"
            if let e = p.endpoint { s += "endpoint=\(e)\n" }
            s += "last_handshake_time_sec=\(p.lastHandshakeSec)\n"
            s += "last_handshake_time_nsec=\(p.lastHandshakeNsec)\n"
            s += "tx_bytes=\(p.txBytes)\n"
            s += "rx_bytes=\(p.rxBytes)\n"
            s += "persistent_keepalive_interval=\(p.persistentKeepaliveInterval)\n"
            for a in p.allowedIPs { s += "allowed_ip=\(a)\n" }
        }
        return s
    }

    /// The status that ends every reply: `errno=0\n\n` on success. On failure the number is the
    /// *negated* errno (`errno=-22` for `EINVAL`), as wireguard-go writes it and as `wg set`
    /// expects (it sets `errno = -value` and prints `strerror`).
    public static func statusLine(_ error: UAPIError?) -> String { "errno=\(error.map { -$0.errno } ?? 0)\n\n" }

    /// Parses the lines of a `set=1` operation (after the `set=1` line, without the terminating
    /// blank line) following wireguard-go's rules: device keys until the first `public_key`,
    /// then peer keys; boolean keys accept only `true`. (`UAPISetParser` does the same a line
    /// at a time, for requests streamed off a socket.)
    /// - Throws: `UAPIError` with `EPROTO` for a line without `=`, `EINVAL` for an unknown key
    ///   or a bad value.
    public static func parseSet<S: StringProtocol>(_ lines: [S]) throws(UAPIError) -> UAPISetRequest {
        var parser = UAPISetParser()
        for raw in lines { try parser.feed(raw) }
        return parser.finish()
    }

    static func requireTrue(_ key: String, _ value: String) throws(UAPIError) {
        guard value == "true" else { throw .invalid("\(key): only 'true' is accepted, got '\(value.prefix(40))'") }
    }

    static func number<T: FixedWidthInteger>(_ key: String, _ value: String, _: T.Type) throws(UAPIError) -> T {
        guard !value.isEmpty, value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }), let n = T(value) else {
            throw .invalid("\(key): '\(value.prefix(40))' is not a number in 0...\(T.max)")
        }
        return n
    }

    static func applyDevice(_ key: String, _ value: String, _ r: inout UAPISetRequest) throws(UAPIError) {
        switch key {
        case "private_key":
            guard let k = WireGuardKey(hex: value) else { throw .invalid("private_key: not 64 hex digits") }
            r.privateKey = k
        case "listen_port": r.listenPort = try number(key, value, UInt16.self)
        case "fwmark": r.fwmark = try number(key, value, UInt32.self)
        case "replace_peers":
            try requireTrue(key, value)
            r.replacePeers = true
        default:
            throw .invalid("invalid UAPI device key: '\(key.prefix(40))'")
        }
    }

    static func applyPeer(_ key: String, _ value: String, _ p: inout UAPIPeerUpdate) throws(UAPIError) {
        switch key {
        case "update_only":
            try requireTrue(key, value)
            p.updateOnly = true
        case "remove":
            try requireTrue(key, value)
            p.remove = true
        case "preshared_key":
            guard let k = WireGuardKey(hex: value) else { throw .invalid("preshared_key: not 64 hex digits") }
            p.presharedKey = k
        case "endpoint":
            guard let e = HostPort(value), e.address != nil else {
                throw .invalid("endpoint: '\(value.prefix(80))' is not IP:port or [IPv6]:port")
            }
            p.endpoint = e
        case "persistent_keepalive_interval": p.persistentKeepaliveInterval = try number(key, value, UInt16.self)
        case "replace_allowed_ips":
            try requireTrue(key, value)
            p.replaceAllowedIPs = true
        case "allowed_ip":
            guard value.contains("/"), let prefix = IPPrefix(value) else {
                throw .invalid("allowed_ip: '\(value.prefix(80))' is not ADDR/LEN")
            }
            p.allowedIPs.append(prefix)
        case "protocol_version":
            guard value == "1" else { throw .invalid("protocol_version: '\(value.prefix(20))' is not supported (only 1)") }
            p.protocolVersion = 1
        default:
            throw .invalid("invalid UAPI peer key: '\(key.prefix(40))'")
        }
    }

    /// Parses a `get=1` reply (as `wg` does) back into a snapshot; stops at the `errno=` line.
    /// - Throws: `UAPIError` for malformed lines, unknown keys, bad values, or a non-zero errno.
    public static func parseGet<S: StringProtocol>(_ lines: [S]) throws(UAPIError) -> UAPIDeviceSnapshot {
        var device = UAPIDeviceSnapshot()
        var peer: UAPIPeerSnapshot?
        func flush() {
            if let p = peer { device.peers.append(p) }
            peer = nil
        }
        for raw in lines {
            guard let eq = raw.firstIndex(of: "=") else { throw .protocolError("line '\(raw.prefix(80))' is not key=value") }
            let key = String(raw[..<eq])
            let value = String(raw[raw.index(after: eq)...])
            switch key {
            case "errno":
                let n = try number(key, value, Int32.self)
                guard n == 0 else { throw UAPIError(errno: n, message: "the device reported errno \(n)") }
                flush()
                return device
            case "public_key":
                flush()
                guard let k = WireGuardKey(hex: value) else { throw .invalid("public_key: not 64 hex digits") }
                peer = UAPIPeerSnapshot(publicKey: k)
                continue
            default:
                break
            }
            if var p = peer {
                switch key {
                case "preshared_key":
                    guard let k = WireGuardKey(hex: value) else { throw .invalid("preshared_key: not 64 hex digits") }
                    p.presharedKey = k.isZero ? nil : k
                case "protocol_version":
                    guard value == "1" else { throw .invalid("protocol_version: only 1") }
                case "endpoint":
                    guard let e = HostPort(value), e.address != nil else { throw .invalid("endpoint: not IP:port") }
                    p.endpoint = e
                case "last_handshake_time_sec": p.lastHandshakeSec = try number(key, value, Int64.self)
                case "last_handshake_time_nsec": p.lastHandshakeNsec = try number(key, value, Int64.self)
                case "tx_bytes": p.txBytes = try number(key, value, UInt64.self)
                case "rx_bytes": p.rxBytes = try number(key, value, UInt64.self)
                case "persistent_keepalive_interval": p.persistentKeepaliveInterval = try number(key, value, UInt16.self)
                case "allowed_ip":
                    guard value.contains("/"), let a = IPPrefix(value) else { throw .invalid("allowed_ip: not ADDR/LEN") }
                    p.allowedIPs.append(a)
                default:
                    throw .invalid("unknown peer key '\(key.prefix(40))'")
                }
                peer = p
            } else {
                switch key {
                case "private_key":
                    guard let k = WireGuardKey(hex: value) else { throw .invalid("private_key: not 64 hex digits") }
                    device.privateKey = k
                case "listen_port": device.listenPort = try number(key, value, UInt16.self)
                case "fwmark": device.fwmark = try number(key, value, UInt32.self)
                default: throw .invalid("unknown device key '\(key.prefix(40))'")
                }
            }
        }
        throw .protocolError("reply ended without an errno line")
    }
}
