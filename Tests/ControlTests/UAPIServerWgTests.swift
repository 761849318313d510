import Core
import Foundation
import Packet
import Testing
@testable import ControlProtocol
@testable import Daemon

#if canImport(Glibc)
import Glibc
#endif

/// The real `wg` tool (Debian wireguard-tools) against our UAPIServer. Needs root because `wg`
/// only looks in /var/run/wireguard and refuses non-root callers.
@Suite(.serialized, .enabled(if: isRoot && wgPath != nil, "needs root and wireguard-tools' wg"))
struct UAPIServerWgTests {
    static let peerKey = key(7)
    static let snapshot = UAPIDeviceSnapshot(
        privateKey: key(1), listenPort: 51999, fwmark: 0,
        peers: [
            UAPIPeerSnapshot(
                publicKey: peerKey, presharedKey: nil, endpoint: HostPort("192.0.2.7:40001"),
                lastHandshakeSec: Int64(time(nil)) - 30, lastHandshakeNsec: 5, txBytes: 123_456, rxBytes: 654_321,
                persistentKeepaliveInterval: 25,
                allowedIPs: [IPPrefix("10.99.0.2/32")!, IPPrefix("fd99::2/128")!])
        ])

    func withServer(_ body: (String, Locked<[UAPISetRequest]>) throws -> Void) throws {
        let name = "tvtest\(getpid() % 100000)"
        let received = Locked<[UAPISetRequest]>([])
        let server = try UAPIServer(
            interfaceName: name, get: { Self.snapshot },
            set: { request in
                received.mutate { $0.append(request) }
                return nil
            })
        defer {
            server.stop()
            #expect(access("/var/run/wireguard/\(name).sock", F_OK) != 0, "socket removed on stop")
        }
        try body(name, received)
    }

    @Test func wgShowListsThePeer() throws {
        try withServer { name, _ in
            let (status, out, err) = try run(wgPath!, ["show", name])
            #expect(status == 0, "wg show failed: \(err)")
            #expect(out.contains("interface: \(name)"))
            #expect(out.contains("listening port: 51999"))
            #expect(out.contains("peer: \(Self.peerKey.base64)"))
            #expect(out.contains("endpoint: 192.0.2.7:40001"))
            #expect(out.contains("allowed ips: 10.99.0.2/32, fd99::2/128"))
            #expect(out.contains("latest handshake: 30 seconds ago") || out.contains("latest handshake: 31 seconds ago"))
            #expect(out.contains("persistent keepalive: every 25 seconds"))
        }
    }

    @Test func wgShowconfRoundTrips() throws {
        try withServer { name, _ in
            let (status, out, err) = try run(wgPath!, ["showconf", name])
            #expect(status == 0, "wg showconf failed: \(err)")
            #expect(out.contains("PrivateKey = \(key(1).base64)"))
            #expect(out.contains("ListenPort = 51999"))
            #expect(out.contains("PublicKey = \(Self.peerKey.base64)"))
            #expect(out.contains("AllowedIPs = 10.99.0.2/32, fd99::2/128"))
            #expect(out.contains("Endpoint = 192.0.2.7:40001"))
            #expect(out.contains("PersistentKeepalive = 25"))
        }
    }

    @Test func wgSetEndpointKeepaliveAndRemove() throws {
        try withServer { name, received in
            let k = Self.peerKey.base64
            var (status, _, err) = try run(wgPath!, ["set", name, "peer", k, "endpoint", "127.0.0.1:1234", "persistent-keepalive", "25"])
            #expect(status == 0, "wg set failed: \(err)")
            (status, _, err) = try run(wgPath!, ["set", name, "peer", k, "remove"])
            #expect(status == 0, "wg set remove failed: \(err)")
            let got = received.get()
            try #require(got.count == 2)
            #expect(got[0].peers.count == 1)
            #expect(got[0].peers[0].publicKey == Self.peerKey)
            #expect(got[0].peers[0].endpoint == HostPort(host: "127.0.0.1", port: 1234))
            #expect(got[0].peers[0].persistentKeepaliveInterval == 25)
            #expect(got[0].peers[0].remove == false)
            #expect(got[1].peers.count == 1)
            #expect(got[1].peers[0].publicKey == Self.peerKey)
            #expect(got[1].peers[0].remove == true)
        }
    }

    @Test func wgSetReportsTheHandlersErrno() throws {
        let name = "tvtest\(getpid() % 100000)"
        let server = try UAPIServer(
            interfaceName: name, get: { Self.snapshot },
            set: { _ in .portInUse("test: port taken") })
        defer { server.stop() }
        let (status, _, err) = try run(wgPath!, ["set", name, "listen-port", "1"])
        #expect(status != 0)
        #expect(err.contains("Address already in use"), "wg printed: \(err)")
    }
}
