import Core
import Glibc
import Runtime
import Synchronization
import SystemIO
import Testing
import TestSupport

/// `HTTPListener`: requests reach the handler with method, path and peer; its status, type and
/// body go back; bodies beyond the limit are 413 without reaching it; stop is idempotent.
@Suite struct HTTPListenerTests {
    static func exchange(port: UInt16, _ request: String) throws -> String { try HTTPProbe.exchange(port: port, request) }

    @Test func servesTheHandlersAnswer() throws {
        let seen = Mutex<[HTTPRequest]>([])
        var limits = HTTPLimits()
        limits.bodyBytes = 16
        let listener = try HTTPListener(endpoint: Endpoint(address: IPAddress("127.0.0.1")!, port: 0), limits: limits) { r in
            seen.withLock { $0.append(r) }
            return r.path == "/metrics" ? HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4", body: "up 1\n")
                                        : .notFound("try /metrics")
        }
        defer { listener.stop() }
        let port = listener.endpoint.port
        #expect(port != 0)
        let ok = try Self.exchange(port: port, "GET /metrics HTTP/1.0\r\n\r\n")
        #expect(ok.hasPrefix("HTTP/1.0 200") || ok.hasPrefix("HTTP/1.1 200"), "\(ok)")
        #expect(ok.contains("Content-Type: text/plain; version=0.0.4"))
        #expect(ok.hasSuffix("\r\n\r\nup 1\n"))
        let missing = try Self.exchange(port: port, "GET /nope?x=1 HTTP/1.0\r\n\r\n")
        #expect(missing.contains(" 404 "))
        let big = try Self.exchange(port: port, "POST /metrics HTTP/1.0\r\nContent-Length: 100\r\n\r\n" + String(repeating: "x", count: 100))
        #expect(big.contains(" 413 "), "\(big)")
        let requests = seen.withLock { $0 }
        #expect(requests.map(\.method) == ["GET", "GET"])
        #expect(requests.map(\.path) == ["/metrics", "/nope"] || requests.map(\.path) == ["/metrics", "/nope?x=1"])
        #expect(requests.allSatisfy { $0.peer.hasPrefix("127.0.0.1:") })
        listener.stop()
        listener.stop()
    }

    @Test func aPortInUseIsAnError() throws {
        let first = try HTTPListener(endpoint: Endpoint(address: IPAddress("127.0.0.1")!, port: 0)) { _ in .methodNotAllowed }
        defer { first.stop() }
        #expect(throws: SystemError.self) {
            _ = try HTTPListener(endpoint: first.endpoint) { _ in .methodNotAllowed }
        }
    }

    /// `device`: bound to `lo`, a loopback client is served (and the port 0 → bound port still
    /// works); an interface that does not exist is an error naming it.
    @Test func boundToADevice() throws {
        let listener = try HTTPListener(endpoint: Endpoint(address: IPAddress("127.0.0.1")!, port: 0), device: "lo") { _ in
            HTTPResponse(status: 200, body: "on lo\n")
        }
        defer { listener.stop() }
        #expect(listener.endpoint.port != 0)
        let answer = try Self.exchange(port: listener.endpoint.port, "GET / HTTP/1.0\r\n\r\n")
        #expect(answer.hasSuffix("\r\n\r\non lo\n"), "\(answer)")
        do {
            _ = try HTTPListener(endpoint: Endpoint(address: IPAddress("127.0.0.1")!, port: 0), device: "tvnone0") { _ in .methodNotAllowed }
            Issue.record("binding to a missing interface succeeded")
        } catch {
            #expect("\(error)".contains("tvnone0"), "\(error)")
        }
    }
}
