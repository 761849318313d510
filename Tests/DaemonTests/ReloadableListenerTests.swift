import Core
import Engine
import Glibc
import Runtime
import SystemIO
import Testing
import TestSupport

@testable import Daemon

/// `StatusListen`/`MetricsListen` follow reloads (`ReloadableListener`): start, unchanged, move
/// (the old port closes only after the new one listens), a move that cannot bind keeps the old
/// listener serving, a move to the same port on an overlapping address, off. Real listeners on
/// loopback.
@Suite(.serialized) struct ReloadableListenerTests {
    static func at(_ port: UInt16, _ address: String = "127.0.0.1") -> Endpoint {
        Endpoint(address: IPAddress(address)!, port: port)
    }

    /// A listener whose every answer names `tag`, so a response shows which one served it.
    static func open(_ tag: String) -> (Endpoint) throws(SystemError) -> HTTPListener {
        { e throws(SystemError) in try HTTPListener(endpoint: e) { _ in HTTPResponse(status: 200, body: "\(tag)\n") } }
    }

    static func body(_ port: UInt16) -> String? {
        guard let r = try? HTTPProbe.exchange(port: port, "GET / HTTP/1.0\r\n\r\n", timeoutSeconds: 2) else { return nil }
        return r.split(separator: "\r\n\r\n", maxSplits: 1).last.map(String.init)
    }

    /// A port nothing listens on now (bound, read, released).
    static func freePort() throws -> UInt16 {
        let l = try HTTPListener(endpoint: at(0)) { _ in HTTPResponse(status: 200, body: "") }
        defer { l.stop() }
        return l.endpoint.port
    }

    @Test func startMoveKeepAndStop() throws {
        let l = ReloadableListener(key: "StatusListen")
        #expect(l.endpoint == nil)
        guard case .started(let first) = l.apply(Self.at(0), open: Self.open("one")) else {
            Issue.record("not started"); return
        }
        #expect(first.port != 0 && l.endpoint == first)
        #expect(Self.body(first.port) == "one\n")
        // The same configured endpoint (port 0 as written): nothing is opened again.
        #expect("\(l.apply(Self.at(0), open: Self.open("again")))" == "unchanged")
        #expect(Self.body(first.port) == "one\n")

        // Moved: the new port serves, the old one is closed.
        let second = try Self.freePort()
        guard case .moved(let from, let to) = l.apply(Self.at(second), open: Self.open("two")) else {
            Issue.record("not moved"); return
        }
        #expect(from == first && to.port == second && l.endpoint == to)
        #expect(Self.body(second) == "two\n")
        #expect(Self.body(first.port) == nil)

        // A port someone else holds: the move fails, the old listener keeps serving.
        let squatter = try HTTPListener(endpoint: Self.at(0)) { _ in HTTPResponse(status: 200, body: "squatter\n") }
        defer { squatter.stop() }
        let change = l.apply(Self.at(squatter.endpoint.port), open: Self.open("three"))
        guard case .failed(let wanted, _, let keeping) = change else { Issue.record("not failed: \(change)"); return }
        #expect(wanted.port == squatter.endpoint.port && keeping?.port == second)
        #expect("\(change)".contains("still serving on 127.0.0.1:\(second)"))
        #expect(Self.body(second) == "two\n" && Self.body(squatter.endpoint.port) == "squatter\n")
        #expect(l.endpoint?.port == second)

        // The same port on an overlapping address (127.0.0.1:P → 0.0.0.0:P): freed, then bound.
        guard case .moved(_, let wide) = l.apply(Self.at(second, "0.0.0.0"), open: Self.open("wide")) else {
            Issue.record("not moved to 0.0.0.0"); return
        }
        #expect(wide.port == second && Self.body(second) == "wide\n")

        // Off.
        guard case .stopped(let was) = l.apply(nil, open: Self.open("never")) else { Issue.record("not stopped"); return }
        #expect(was.port == second && l.endpoint == nil && Self.body(second) == nil)
        #expect("\(l.apply(nil, open: Self.open("never")))" == "unchanged")
        l.stop()  // idempotent
    }

    /// The status page server over it: counters follow where it listens (nil when off).
    @Test func statusPageCountersFollowTheListener() throws {
        let peers = PeerRegistry()
        let s = StatusPageServer(registry: peers) { p in PeerStatusPage(peer: p.name, tier: p.tier.name, nowMs: 0, state: .connected) }
        #expect(s.counters == nil)
        s.apply(Self.at(0), device: nil)
        let port = try #require(s.counters?.port)
        #expect(Self.body(port) != nil)
        s.apply(nil, device: nil)
        #expect(s.counters == nil && Self.body(port) == nil)
    }
}
