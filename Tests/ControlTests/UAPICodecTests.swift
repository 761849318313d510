import Core
import Packet
import Testing
@testable import Config
@testable import ControlProtocol

#if canImport(Glibc)
import Glibc
#endif

let sampleDevice = UAPIDeviceSnapshot(
    privateKey: key(1), listenPort: 51820, fwmark: 7,
    peers: [
        UAPIPeerSnapshot(
            publicKey: key(2), presharedKey: key(3), endpoint: HostPort("[2001:db8::5]:4500"), lastHandshakeSec: 1_764_400_000,
            lastHandshakeNsec: 123, txBytes: 1, rxBytes: 2, persistentKeepaliveInterval: 25,
            allowedIPs: [IPPrefix("10.99.0.2/32")!, IPPrefix("fd99::2/128")!]),
        UAPIPeerSnapshot(publicKey: key(4)),
    ])

@Suite struct UAPICodecTests {
    @Test func getOutputIsWhatWireguardGoWrites() {
        let zero = String(repeating: "0", count: 64)
        let expected = """
            private_key=\(key(1).hex)
            listen_port=51820
            fwmark=7
            public_key=\(key(2).hex)
            preshared_key=\(key(3).hex)
            protocol_version=1
            endpoint=[2001:db8::5]:4500
            last_handshake_time_sec=1764400000
            last_handshake_time_nsec=123
            tx_bytes=1
            rx_bytes=2
            persistent_keepalive_interval=25
            allowed_ip=10.99.0.2/32
            allowed_ip=fd99::2/128
            public_key=\(key(4).hex)
            preshared_key=\(zero)
            protocol_version=1
            last_handshake_time_sec=0
            last_handshake_time_nsec=0
            tx_bytes=0
            rx_bytes=0
            persistent_keepalive_interval=0

            """
        #expect(UAPICodec.encodeGet(sampleDevice) == expected)
        #expect(key(1).hex == "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20")
    }

    @Test func emptyDeviceOmitsZeroFields() {
        #expect(UAPICodec.encodeGet(UAPIDeviceSnapshot()) == "")
        #expect(UAPICodec.encodeGet(UAPIDeviceSnapshot(privateKey: WireGuardKey(bytes: [UInt8](repeating: 0, count: 32)))) == "")
    }

    @Test func statusLines() {
        #expect(UAPICodec.statusLine(nil) == "errno=0\n\n")
        #expect(UAPICodec.statusLine(.invalid("x")) == "errno=-\(EINVAL)\n\n")
        #expect(UAPICodec.statusLine(.protocolError("x")) == "errno=-\(EPROTO)\n\n")
    }

    @Test func getRoundTrips() throws {
        let text = UAPICodec.encodeGet(sampleDevice) + "errno=0"
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(try UAPICodec.parseGet(lines) == sampleDevice)
    }

    @Test func getParserReportsTheDeviceErrno() {
        let e = #expect(throws: UAPIError.self) { try UAPICodec.parseGet(["errno=5"]) }
        #expect(e?.errno == 5)
    }

    @Test func everyTruncationOfGetOutputIsHandled() {
        let lines = (UAPICodec.encodeGet(sampleDevice) + "errno=0").split(separator: "\n").map(String.init)
        for n in 0..<lines.count {
            #expect(throws: UAPIError.self) { try UAPICodec.parseGet(Array(lines[0..<n])) }
            // Truncate the last line by characters too.
            if n < lines.count - 1 {
                let last = lines[n]
                for c in 0..<last.count {
                    var cut = Array(lines[0..<n])
                    cut.append(String(last.prefix(c)))
                    cut.append("errno=0")
                    _ = try? UAPICodec.parseGet(cut)  // may parse or fail; must not crash
                }
            }
        }
    }

    @Test func setWithEverything() throws {
        let lines = [
            "private_key=\(key(1).hex)", "listen_port=12912", "fwmark=0", "replace_peers=true",
            "public_key=\(key(2).hex)", "preshared_key=\(key(3).hex)", "endpoint=[abcd:23::33%2]:51820".replacingOccurrences(of: "%2", with: ""),
            "replace_allowed_ips=true", "allowed_ip=192.168.4.4/32",
            "public_key=\(key(4).hex)", "endpoint=182.122.22.19:3233", "persistent_keepalive_interval=111",
            "replace_allowed_ips=true", "allowed_ip=192.168.4.6/32", "allowed_ip=10.0.0.9/8",
            "public_key=\(key(5).hex)", "update_only=true", "protocol_version=1",
            "public_key=\(key(6).hex)", "remove=true",
        ]
        let r = try UAPICodec.parseSet(lines)
        #expect(r.privateKey == key(1))
        #expect(r.listenPort == 12912)
        #expect(r.fwmark == 0)
        #expect(r.replacePeers)
        try #require(r.peers.count == 4)
        #expect(r.peers[0].publicKey == key(2))
        #expect(r.peers[0].presharedKey == key(3))
        #expect(r.peers[0].endpoint == HostPort(host: "abcd:23::33", port: 51820))
        #expect(r.peers[0].replaceAllowedIPs)
        #expect(r.peers[0].allowedIPs == [IPPrefix("192.168.4.4/32")!])
        #expect(r.peers[1].endpoint == HostPort(host: "182.122.22.19", port: 3233))
        #expect(r.peers[1].persistentKeepaliveInterval == 111)
        #expect(r.peers[1].allowedIPs == [IPPrefix("192.168.4.6/32")!, IPPrefix("10.0.0.0/8")!], "host bits cleared")
        #expect(r.peers[2].updateOnly)
        #expect(r.peers[2].protocolVersion == 1)
        #expect(!r.peers[2].remove)
        #expect(r.peers[3].remove)
        #expect(r.peers[3].endpoint == nil)
    }

    @Test func emptySetChangesNothing() throws {
        #expect(try UAPICodec.parseSet([String]()) == UAPISetRequest())
    }

    @Test(arguments: [
        (["listen_port"], EPROTO, "line 'listen_port' is not key=value"),
        (["listen_port=65536"], EINVAL, "listen_port: '65536' is not a number in 0...65535"),
        (["listen_port=-1"], EINVAL, "listen_port: '-1' is not a number in 0...65535"),
        (["listen_port="], EINVAL, "listen_port: '' is not a number in 0...65535"),
        (["fwmark=0x10"], EINVAL, "fwmark: '0x10' is not a number in 0...4294967295"),
        (["private_key=abc"], EINVAL, "private_key: not 64 hex digits"),
        (["replace_peers=false"], EINVAL, "replace_peers: only 'true' is accepted, got 'false'"),
        (["endpoint=1.2.3.4:5"], EINVAL, "invalid UAPI device key: 'endpoint'"),
        (["public_key=zz"], EINVAL, "public_key: 'zz' is not 64 hex digits"),
        (["public_key=\(key(2).hex)", "remove=1"], EINVAL, "remove: only 'true' is accepted, got '1'"),
        (["public_key=\(key(2).hex)", "update_only=yes"], EINVAL, "update_only: only 'true' is accepted, got 'yes'"),
        (["public_key=\(key(2).hex)", "replace_allowed_ips=TRUE"], EINVAL, "replace_allowed_ips: only 'true' is accepted, got 'TRUE'"),
        (["public_key=\(key(2).hex)", "preshared_key=00"], EINVAL, "preshared_key: not 64 hex digits"),
        (["public_key=\(key(2).hex)", "endpoint=example.com:51820"], EINVAL, "endpoint: 'example.com:51820' is not IP:port or [IPv6]:port"),
        (["public_key=\(key(2).hex)", "endpoint=::1:51820"], EINVAL, "endpoint: '::1:51820' is not IP:port or [IPv6]:port"),
        (["public_key=\(key(2).hex)", "persistent_keepalive_interval=65536"], EINVAL, "persistent_keepalive_interval: '65536' is not a number in 0...65535"),
        (["public_key=\(key(2).hex)", "allowed_ip=10.0.0.1"], EINVAL, "allowed_ip: '10.0.0.1' is not ADDR/LEN"),
        (["public_key=\(key(2).hex)", "allowed_ip=10.0.0.1/33"], EINVAL, "allowed_ip: '10.0.0.1/33' is not ADDR/LEN"),
        (["public_key=\(key(2).hex)", "protocol_version=2"], EINVAL, "protocol_version: '2' is not supported (only 1)"),
        (["public_key=\(key(2).hex)", "listen_port=1"], EINVAL, "invalid UAPI peer key: 'listen_port'"),
    ] as [([String], Int32, String)])
    func setErrors(lines: [String], errno: Int32, message: String) {
        let e = #expect(throws: UAPIError.self) { try UAPICodec.parseSet(lines) }
        #expect(e?.errno == errno)
        #expect(e?.message == message)
    }
}

@Suite struct KeyAndEndpointTests {
    @Test func base64AndHexRoundTrip() {
        for n in [UInt8(0), 1, 200, 255] {
            let k = key(n)
            #expect(WireGuardKey(base64: k.base64) == k)
            #expect(WireGuardKey(hex: k.hex) == k)
            #expect(WireGuardKey(hex: k.hex.uppercased()) == k)
            #expect(k.base64.count == 44)
        }
    }

    @Test func knownAnswer() {
        // 32 zero bytes.
        #expect(WireGuardKey(base64: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")?.isZero == true)
        #expect(WireGuardKey(bytes: [UInt8](repeating: 0xFF, count: 32))?.base64 == "//////////////////////////////////////////8=")
    }

    @Test(arguments: ["", "AAAA", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                      "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==", " AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA*="])
    func badBase64(text: String) {
        #expect(WireGuardKey(base64: text) == nil)
    }

    @Test func badHex() {
        #expect(WireGuardKey(hex: String(repeating: "0", count: 63)) == nil)
        #expect(WireGuardKey(hex: String(repeating: "g", count: 64)) == nil)
        #expect(WireGuardKey(bytes: [1, 2, 3]) == nil)
    }

    @Test(arguments: [
        ("1.2.3.4:51820", "1.2.3.4", UInt16(51820)), ("[fd00::1]:1", "fd00::1", 1), ("vpn.example.com:443", "vpn.example.com", 443),
        ("[::ffff:1.2.3.4]:65535", "::ffff:1.2.3.4", 65535),
    ] as [(String, String, UInt16)])
    func goodEndpoints(text: String, host: String, port: UInt16) {
        let e = HostPort(text)
        #expect(e == HostPort(host: host, port: port))
        #expect(e?.description == text)
    }

    @Test(arguments: ["", ":51820", "1.2.3.4", "1.2.3.4:", "1.2.3.4:0", "1.2.3.4:65536", "1.2.3.4:+5", "fd00::1:51820", "[fd00::1]51820",
                      "[fd00::1", "[1.2.3.4]:5", "[nothost]:5", "a b:5"])
    func badEndpoints(text: String) {
        #expect(HostPort(text) == nil)
    }

    @Test func interfaceAddressKeepsTheHost() {
        let a = InterfaceAddress("10.99.0.1/24")
        #expect(a?.address == IPAddress("10.99.0.1"))
        #expect(a?.subnet == IPPrefix("10.99.0.0/24"))
        #expect(InterfaceAddress("fd99::1")?.prefixLength == 128)
        for bad in ["10.99.0.1/", "10.99.0.1/33", "/24", "fd99::1/129", "10.99.0.1/-1", "10.99.0.1/2 4"] {
            #expect(InterfaceAddress(bad) == nil, "\(bad)")
        }
    }

    @Test func didYouMean() {
        #expect(DidYouMean.closest("listenprot", among: TunnelConfig.interfaceKeys) == "ListenPort")
        #expect(DidYouMean.closest("PersistentKeepAlive", among: TunnelConfig.peerKeys) == "PersistentKeepalive")
        #expect(DidYouMean.closest("zzzz", among: TunnelConfig.peerKeys) == nil)
        #expect(DidYouMean.distance(Array("kitten"), Array("sitting")) == 3)
        #expect(DidYouMean.distance([Character](), Array("abc")) == 3)
    }
}
