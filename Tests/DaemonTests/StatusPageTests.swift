import Config
import Core
import Engine
import Foundation
import Packet
import Sessions
import SystemIO
import Testing
import WireGuard

@testable import Daemon

/// The per-peer status page (`StatusListen`, docs/limits.md "Status page"): golden HTML and JSON
/// of the pure renderer (a free peer in its window, a paused one, a premium one), escaping, the
/// page built from the watchdog's view, and identification by cryptokey routing only.
///
/// The golden files live with tunnelctl's (Tests/TunnelctlTests/Golden/status-page-*), so that
/// JSONSchemaTests checks the JSON against docs/json.md; TUNNELVISION_UPDATE_GOLDEN=1 rewrites them.
@Suite struct StatusPageTests {
    static let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../TunnelctlTests/Golden").standardized

    func expectGolden(_ text: String, _ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let url = Self.golden.appendingPathComponent(name)
        if ProcessInfo.processInfo.environment["TUNNELVISION_UPDATE_GOLDEN"] == "1" {
            try text.write(to: url, atomically: true, encoding: .utf8)
            return
        }
        let want = try String(contentsOf: url, encoding: .utf8)
        #expect(text == want, "golden \(name) differs:\n\(text)", sourceLocation: sourceLocation)
    }

    /// 2026-12-02 15:30:00 UTC.
    static let now: Int64 = 1_796_225_400_000

    /// `trial`-like free limits: 30 min per window, 23h30m pause, 1 GiB quota, 5 Mbit/s, 10 min idle.
    static let freeLimits = PeerLimits(
        sessionMs: 30 * 60_000, pauseMs: (23 * 60 + 30) * 60_000, quotaBytes: 1 << 30, rateUpBitsPerSecond: 5_000_000,
        rateDownBitsPerSecond: 5_000_000, idleTimeoutMs: 10 * 60_000, maxFlows: 512, newFlowsPerSecond: 50)

    /// alice, free, connected 17m30s ago, 12m30s left in her window, 312 MiB of 1 GiB used.
    static let freeInWindow = PeerStatusPage(
        peer: "alice", tier: "free", nowMs: now, state: .connected, connectedSinceMs: now - 17 * 60_000 - 30_000,
        windowEndMs: now + 12 * 60_000 + 30_000, quotaUsed: .init(up: 12 << 20, down: 300 << 20), limits: freeLimits,
        expiresAtMs: now + 30 * 86_400_000)

    /// carol, free, paused for 23h10m more; refused now; quota not counted by this daemon.
    static let paused = PeerStatusPage(
        peer: "carol", tier: "free", nowMs: now, state: .paused, refusedNow: true,
        pauseEndMs: now + (23 * 60 + 10) * 60_000, limits: freeLimits)

    /// bob, premium, connected for 2 days, no limits at all but a 100 Mbit/s download rate.
    static let premium = PeerStatusPage(
        peer: "bob", tier: "premium", nowMs: now, state: .connected, connectedSinceMs: now - 2 * 86_400_000,
        quotaUsed: .init(up: 5_000_000_000, down: 70_000_000_000),
        limits: PeerLimits(rateDownBitsPerSecond: 100_000_000))

    @Test func goldenFreePeerInItsWindow() throws {
        try expectGolden(StatusPageRender.html(Self.freeInWindow), "status-page-free.html")
        try expectGolden(StatusPageRender.json(Self.freeInWindow), "status-page-free.json")
        let html = StatusPageRender.html(Self.freeInWindow)
        #expect(html.contains("in 12m30s (2026-12-02 15:42:30 UTC)"))
        #expect(html.contains("312.0 MiB of 1.0 GiB used"))
        #expect(html.contains("5 Mbit/s / 5 Mbit/s"))
    }

    @Test func goldenPausedPeer() throws {
        try expectGolden(StatusPageRender.html(Self.paused), "status-page-paused.html")
        try expectGolden(StatusPageRender.json(Self.paused), "status-page-paused.json")
        let html = StatusPageRender.html(Self.paused)
        #expect(html.contains("Paused: you can reconnect in 23h10m00s"))
        #expect(html.contains("1.0 GiB per window (use not counted)"))
    }

    @Test func goldenPremiumPeer() throws {
        try expectGolden(StatusPageRender.html(Self.premium), "status-page-premium.html")
        try expectGolden(StatusPageRender.json(Self.premium), "status-page-premium.json")
    }

    /// What every page must be: readable on a phone, no script, reloading itself.
    @Test func pageShape() {
        for p in [Self.freeInWindow, Self.paused, Self.premium] {
            let html = StatusPageRender.html(p)
            #expect(html.hasPrefix("<!DOCTYPE html>"))
            #expect(html.contains(#"<meta name="viewport" content="width=device-width, initial-scale=1">"#))
            #expect(html.contains(#"<meta http-equiv="refresh" content="30">"#))
            #expect(!html.lowercased().contains("<script"))
        }
    }

    @Test func jsonParsesWithEveryFieldPresent() throws {
        for p in [Self.freeInWindow, Self.paused, Self.premium] {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(StatusPageRender.json(p).utf8)) as? [String: Any])
            #expect(object["peer"] as? String == p.peer)
            #expect(object["tier"] as? String == p.tier)
            #expect(Set(object.keys) == ["peer", "tier", "state", "refusedNow", "generatedAt", "connectedSince", "windowEndsAt",
                                         "remainingSessionSeconds", "pauseEndsAt", "expiresAt", "disabled", "limits", "quotaUsed"])
        }
        let free = try #require(try JSONSerialization.jsonObject(with: Data(StatusPageRender.json(Self.freeInWindow).utf8)) as? [String: Any])
        #expect(free["remainingSessionSeconds"] as? Int == 750)
        #expect(free["windowEndsAt"] as? String == "2026-12-02T15:42:30.000Z")
        #expect((free["quotaUsed"] as? [String: Any])?["totalBytes"] as? Int == 312 << 20)
        let paused = try #require(try JSONSerialization.jsonObject(with: Data(StatusPageRender.json(Self.paused).utf8)) as? [String: Any])
        #expect(paused["quotaUsed"] is NSNull)
        #expect(paused["refusedNow"] as? Bool == true)
    }

    /// A peer name is whatever the operator wrote: escaped everywhere in the HTML, exact in the JSON.
    @Test func oddNamesAreEscaped() throws {
        let name = #"<script>alert("x")</script>&'é 💡"#
        var p = Self.premium
        p.peer = name
        p.tier = "<b>"
        let html = StatusPageRender.html(p)
        #expect(!html.contains("<script"))
        #expect(!html.contains("<b>"))
        #expect(html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;é 💡"))
        #expect(html.contains("<title>&lt;script&gt;"))
        #expect(StatusPageRender.esc("a\u{0}b\nc") == "a&#0;b&#10;c")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(StatusPageRender.json(p).utf8)) as? [String: Any])
        #expect(object["peer"] as? String == name)
        #expect(object["tier"] as? String == "<b>")
    }

    // MARK: - built from the daemon's state

    let aliceHandle = PeerHandle(rawValue: 1)
    let bobHandle = PeerHandle(rawValue: 2)

    func registry() -> PeerRegistry {
        let alice = GatewayPeer(handle: aliceHandle, name: "alice", publicKey: PublicKey([UInt8](repeating: 1, count: 32))!,
                                allowedIPs: [IPPrefix("10.99.0.2/32")!, IPPrefix("fd99::2/128")!], tier: .free)
        let bob = GatewayPeer(handle: bobHandle, name: "bob", publicKey: PublicKey([UInt8](repeating: 2, count: 32))!,
                              allowedIPs: [IPPrefix("10.99.0.3/32")!, IPPrefix("10.77.0.0/16")!], tier: .premium)
        return PeerRegistry([alice, bob], tiers: TierClasses(freeSessionMs: 20_000, freePauseMs: 30_000))
    }

    @Test func builtFromTheWatchdogView() throws {
        let peers = registry()
        let cfg = WatchdogConfig(idleMs: 180_000, intervalMs: 1_000)
        let w = Watchdog(config: cfg, peers: peers, device: FakeWatchdogDevice(), sink: CaptureSink())
        let t0 = Self.now
        let alice = try #require(peers.current.named("alice"))
        let before = PeerStatusPage.build(peer: alice, view: w.view("alice"), restriction: nil, quotaUsed: nil, now: t0)
        #expect(before.state == .disconnected && before.windowEndMs == nil && before.remainingSessionMs == 20_000)

        #expect(w.handshakeCompleted(aliceHandle, now: t0))
        let connected = PeerStatusPage.build(peer: alice, view: w.view("alice"), restriction: nil,
                                             quotaUsed: .init(up: 1, down: 2), now: t0 + 5_000)
        #expect(connected.state == .connected && connected.connectedSinceMs == t0)
        #expect(connected.windowEndMs == t0 + 20_000 && connected.remainingSessionMs == 15_000)
        #expect(connected.quotaUsed?.total == 3 && !connected.refusedNow)

        w.tick(now: t0 + 20_000)
        let paused = PeerStatusPage.build(peer: alice, view: w.view("alice"), restriction: nil, quotaUsed: nil, now: t0 + 21_000)
        #expect(paused.state == .paused && paused.refusedNow && paused.pauseEndMs == t0 + 50_000)
        #expect(paused.windowEndMs == nil && paused.connectedSinceMs == nil && paused.remainingSessionMs == 0)

        let disabled = PeerStatusPage.build(peer: alice, view: w.view("alice"), restriction: .disabled, quotaUsed: nil, now: t0)
        #expect(disabled.state == .disabled && disabled.disabled)
        let expired = PeerStatusPage.build(peer: alice, view: w.view("alice"), restriction: .expires(at: t0 - 1), quotaUsed: nil, now: t0)
        #expect(expired.state == .expired && expired.expiresAtMs == t0 - 1)
        let expiring = PeerStatusPage.build(peer: alice, view: nil, restriction: .expires(at: t0 + 1), quotaUsed: nil, now: t0)
        #expect(expiring.state == .disconnected && expiring.expiresAtMs == t0 + 1)

        // Without the watchdog's view: the registry's resolved limits.
        let noView = PeerStatusPage.build(peer: alice, view: nil, restriction: nil, quotaUsed: nil, now: t0)
        #expect(noView.limits.sessionMs == 20_000 && noView.limits.pauseMs == 30_000 && noView.remainingSessionMs == 20_000)

        let bob = try #require(peers.current.named("bob"))
        let premium = PeerStatusPage.build(peer: bob, view: w.view("bob"), restriction: nil, quotaUsed: nil, now: t0)
        #expect(premium.tier == "premium" && premium.remainingSessionMs == nil && premium.windowEndMs == nil)
    }

    // MARK: - identification

    /// A server whose pages carry only the asking peer's name (so a body names exactly who it served).
    func server(_ peers: PeerRegistry) -> StatusPageServer {
        StatusPageServer(registry: peers) { p in PeerStatusPage(peer: p.name, tier: p.tier.name, nowMs: Self.now, state: .connected) }
    }

    func get(_ s: StatusPageServer, _ path: String, from client: String, method: String = "GET") -> HTTPResponse {
        s.respond(to: HTTPRequest(method: method, path: path, peer: client))
    }

    @Test func anAddressOfAPeerGetsThatPeersPage() {
        let s = server(registry())
        for (client, want, other) in [("10.99.0.2:40412", "alice", "bob"), ("[fd99::2]:555", "alice", "bob"),
                                      ("10.99.0.3:1", "bob", "alice"), ("10.77.12.34:80", "bob", "alice")]
        {
            let page = get(s, "/", from: client)
            #expect(page.status == 200 && page.contentType == StatusPageRender.htmlType, "\(client)")
            #expect(page.body.contains("<h1>\(want)</h1>") && !page.body.contains(other), "\(client)")
            let json = get(s, "/status.json", from: client)
            #expect(json.status == 200 && json.contentType == StatusPageRender.jsonType)
            #expect(json.body.contains("\"peer\" : \"\(want)\"") && !json.body.contains(other), "\(client)")
        }
    }

    @Test func anAddressOfNoPeerGets403AndNothingAboutAnyPeer() {
        let s = server(registry())
        for client in ["10.99.0.9:40412", "10.99.0.1:80", "127.0.0.1:5", "[fd99::3]:1", "garbage", ""] {
            for path in ["/", "/status.json", "/?peer=alice"] {
                let r = get(s, path, from: client)
                #expect(r.status == 403, "\(client) \(path)")
                #expect(!r.body.contains("alice") && !r.body.contains("bob"), "\(client) \(path)")
            }
        }
        #expect(s.counters == nil)  // not listening: no counters in status
    }

    /// Nothing in the request but its source address chooses the peer: query strings, paths and
    /// (not even passed on by HTTPListener) headers or cookies cannot reach bob's page from alice.
    @Test func noRequestFieldSelectsAnotherPeer() {
        let s = server(registry())
        let tries = ["/?peer=bob", "/status.json?peer=bob", "/status.json?name=bob&peer=bob", "/bob", "/status.json/bob",
                     "/?10.99.0.3", "/%62ob", "//status.json?peer=bob", "/index.html?peer=bob"]
        for path in tries {
            let r = get(s, path, from: "10.99.0.2:40000")
            #expect(!r.body.contains("bob"), "\(path): \(r.status)")
            #expect(r.status == 200 || r.status == 404, "\(path): \(r.status)")
            if r.status == 200 { #expect(r.body.contains("alice"), "\(path)") }
        }
        #expect(get(s, "/?peer=bob", from: "10.99.0.2:1").body.contains("<h1>alice</h1>"))
    }

    @Test func methodsPathsAndCounters() throws {
        let s = server(registry())
        #expect(get(s, "/", from: "10.99.0.2:1", method: "POST").status == 405)
        #expect(get(s, "/", from: "10.99.0.2:1", method: "HEAD").status == 200)
        let missing = get(s, "/metrics", from: "10.99.0.2:1")
        #expect(missing.status == 404 && missing.body.contains("/status.json"))
        // Counters over a real listener on loopback (port 0: any free port); 127.0.0.1 is nobody's here.
        try s.start(on: Endpoint(address: IPAddress("127.0.0.1")!, port: 0), device: nil)
        defer { s.stop() }
        _ = get(s, "/", from: "10.99.0.9:1")
        let c = try #require(s.counters)
        #expect(c.address == "127.0.0.1" && c.port != 0)
        #expect(c.requests == 4 && c.refused == 1)
        s.stop()
        s.stop()  // idempotent
    }

    @Test func statusListenMustBeAnInterfaceAddress() {
        var iface = InterfaceConfig()
        iface.addresses = [InterfaceAddress("10.99.0.1/24")!, InterfaceAddress("fd99::1/64")!]
        #expect(StatusPageServer.addressProblem(iface) == nil)
        iface.statusListen = Endpoint("10.99.0.1:80")
        #expect(StatusPageServer.addressProblem(iface) == nil)
        iface.statusListen = Endpoint("[fd99::1]:8080")
        #expect(StatusPageServer.addressProblem(iface) == nil)
        iface.statusListen = Endpoint("192.168.1.1:80")
        let problem = StatusPageServer.addressProblem(iface) ?? ""
        #expect(problem.hasPrefix("StatusListen = 192.168.1.1:80 in [Interface] is not an address of interface"))
        #expect(problem.contains("set StatusListen = 10.99.0.1:80 or [fd99::1]:80, or off"))
    }
}
