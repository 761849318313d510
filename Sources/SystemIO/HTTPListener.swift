import CHTTP
import Core
import Glibc
import Runtime
import Synchronization

/// One HTTP request as `HTTPListener` hands it to its handler (the body, if any, is not kept).
public struct HTTPRequest: Sendable, Hashable {
    /// `GET`, `HEAD`, `POST`, …
    public var method: String
    /// The request target as sent, query included (`/metrics`, `/status?peer=alice`).
    public var path: String
    /// The client's address and port (`127.0.0.1:40412`, `[::1]:40412`).
    public var peer: String
    /// A request from its fields.
    public init(method: String, path: String, peer: String) {
        self.method = method
        self.path = path
        self.peer = peer
    }
}

/// The handler's answer.
public struct HTTPResponse: Sendable, Hashable {
    /// HTTP status code.
    public var status: Int
    /// `Content-Type` header.
    public var contentType: String
    /// The body (empty for HEAD is the caller's choice; libmicrohttpd drops it for HEAD anyway).
    public var body: String
    /// A response from its fields.
    public init(status: Int, contentType: String = "text/plain; charset=utf-8", body: String) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }
    /// `404 not found` naming what is served instead.
    public static func notFound(_ hint: String) -> HTTPResponse { HTTPResponse(status: 404, body: "not found; \(hint)\n") }
    /// `405 method not allowed`.
    public static let methodNotAllowed = HTTPResponse(status: 405, body: "only GET and HEAD are served\n")
}

/// What one client may cost an `HTTPListener`.
public struct HTTPLimits: Sendable, Hashable {
    /// Open connections at most (more are refused at accept).
    public var connections: Int = 16
    /// A slow or idle connection is closed after this many seconds.
    public var timeoutSeconds: Int = 10
    /// The request line and headers must fit in this (libmicrohttpd answers 431/414 beyond).
    public var requestBytes: Int = 16 * 1024
    /// Request bodies beyond this are answered 413 (never kept in memory).
    public var bodyBytes: Int = 0
    /// The defaults: 16 connections, 10 s, 16 KiB of headers, no body.
    public init() {}
}

/// A small, generic HTTP/1.1 listener (libmicrohttpd with its own polling thread): a bind
/// address, limits, and a handler closure called for each complete request on that thread.
/// Used for `MetricsListen` (Prometheus `/metrics`); nothing in it knows what is served.
///
/// The handler must be quick and must not block on the data path: it runs on the listener's one
/// thread, so a slow handler delays the next request, never a packet.
public final class HTTPListener: @unchecked Sendable {
    // Safe: `server` is set in init and cleared only in `stop` (idempotent, guarded by `stopped`);
    // libmicrohttpd calls the handler on its own thread until tv_http_stop returns, and `box`
    // (which the C side points at) lives as long as `self`.
    private var server: OpaquePointer?
    private let box: HandlerBox
    private let stopped = Mutex(false)
    /// The address and port it listens on (the bound port when 0 was asked).
    public let endpoint: Endpoint

    /// Starts listening on `endpoint`; with `device`, only for connections that arrive on that
    /// interface (SO_BINDTODEVICE: from any other one the port is closed, even for a local
    /// address). Throws with what and where when the address cannot be bound.
    public init(endpoint: Endpoint, device: String? = nil, limits: HTTPLimits = HTTPLimits(),
                handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse) throws(SystemError)
    {
        box = HandlerBox(handler)
        var storage = sockaddr_storage()
        let length = withUnsafeMutableBytes(of: &storage) { endpoint.write(sockaddr: $0.baseAddress!) }
        var cLimits = tv_http_limits(
            connections: UInt32(max(1, limits.connections)), timeout_seconds: UInt32(max(1, limits.timeoutSeconds)),
            memory_per_connection: max(4096, limits.requestBytes), max_body: max(0, limits.bodyBytes))
        var message = [CChar](repeating: 0, count: 256)
        let context = Unmanaged.passUnretained(box).toOpaque()
        let started = withUnsafePointer(to: &storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                tv_http_start_on_device(sa, length, device, &cLimits, httpTrampoline, context, &message, message.count)
            }
        }
        guard let started else {
            let text = String(decoding: message.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let code = errno == 0 ? EADDRINUSE : errno
            throw SystemError("listen on \(endpoint)\(device.map { " (interface \($0))" } ?? "") for HTTP (\(text))", errno: code)
        }
        server = started
        self.endpoint = Endpoint(address: endpoint.address, port: tv_http_port(started))
    }

    /// Stops listening; returns after the last handler call ended. Idempotent.
    public func stop() {
        let first = stopped.withLock { s -> Bool in
            defer { s = true }
            return !s
        }
        guard first, let server else { return }
        tv_http_stop(server)
        self.server = nil
    }

    deinit { stop() }
}

/// The handler closure, reachable from C through an unretained pointer.
private final class HandlerBox: Sendable {
    let handler: @Sendable (HTTPRequest) -> HTTPResponse
    init(_ handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse) { self.handler = handler }
}

private func httpTrampoline(context: UnsafeMutableRawPointer?, request: UnsafeMutableRawPointer?,
                            method: UnsafePointer<CChar>?, path: UnsafePointer<CChar>?, peer: UnsafePointer<CChar>?)
{
    guard let context, let request else { return }
    let box = Unmanaged<HandlerBox>.fromOpaque(context).takeUnretainedValue()
    let r = HTTPRequest(method: method.map { String(cString: $0) } ?? "", path: path.map { String(cString: $0) } ?? "",
                        peer: peer.map { String(cString: $0) } ?? "?")
    var response = box.handler(r)
    response.body.withUTF8 { body in
        _ = tv_http_respond(request, UInt32(response.status), response.contentType, body.baseAddress, body.count)
    }
}
