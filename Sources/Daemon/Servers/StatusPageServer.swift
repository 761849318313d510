import Config
import ControlProtocol
import Core
import Engine
import Packet
import Sessions
import Runtime
import Synchronization
import SystemIO

/// `StatusListen` (docs/limits.md "Status page"): HTTP inside the tunnel, answering each peer with
/// its own ``PeerStatusPage`` and nothing about any other.
///
/// The peer is the owner of the request's source address in the cryptokey routing table (the
/// registry's `routes`, the table the data path checked that packet against when it came out of
/// the peer's tunnel). Nothing the client sends — path, query, headers, cookies — selects a peer:
/// ``respond(to:)`` reads only the method, the path without its query, and the client address
/// libmicrohttpd got from the socket. An address that belongs to no peer gets 403.
///
/// The handler reads snapshots only (the registry's current directory, the watchdog's view under
/// its short lock, the quota counter's closure), on the listener's own thread: never the data path.
public final class StatusPageServer: Sendable {
    /// The registry whose routing table identifies the asking peer.
    let registry: PeerRegistry
    /// Builds the page of a peer now.
    let page: @Sendable (GatewayPeer) -> PeerStatusPage
    private let requests = Atomic<UInt64>(0)
    private let refused = Atomic<UInt64>(0)
    /// Where it listens (`StatusListen`, moved by reloads).
    let listening = ReloadableListener(key: "StatusListen")

    /// A server over `registry` building pages with `page`; ``start(on:device:limits:)`` makes it listen.
    public init(registry: PeerRegistry, page: @escaping @Sendable (GatewayPeer) -> PeerStatusPage) {
        self.registry = registry
        self.page = page
    }

    /// The daemon's pages: the watchdog's view (tier, window, session, the limits it enforces and
    /// the bytes used in the window, live from the data path's meter), the config's restrictions
    /// and the clock of `sessions`.
    public convenience init(engine: GatewayEngine, sessions: SessionService) {
        self.init(registry: engine.registry) { peer in
            PeerStatusPage.build(peer: peer, view: sessions.watchdog.view(peer.name), restriction: sessions.restriction(of: peer.name),
                                 now: sessions.time.now())
        }
    }

    /// The peer that owns `client` (`10.99.0.2:40412`, `[fd00::2]:40412`, as `HTTPRequest.peer`
    /// carries the socket's peer address) in `directory`'s routing table; nil for an address of no peer.
    public static func identify(client: String, in directory: PeerDirectory) -> GatewayPeer? {
        guard let address = Endpoint(client)?.address ?? IPAddress(client) else { return nil }
        let owner = directory.routes.lookupRaw(address)
        guard owner >= 0 else { return nil }
        return directory.peer(UInt32(owner))
    }

    /// The answer to `request`: GET/HEAD `/` (HTML) and `/status.json`, 404 with a hint for other
    /// paths, 405 for other methods, 403 when the client address belongs to no peer.
    public func respond(to request: HTTPRequest) -> HTTPResponse {
        requests.add(1, ordering: .relaxed)
        guard request.method == "GET" || request.method == "HEAD" else { return .methodNotAllowed }
        guard let peer = StatusPageServer.identify(client: request.peer, in: registry.current) else {
            refused.add(1, ordering: .relaxed)
            return HTTPResponse(status: 403, body: "forbidden: this page answers only inside the tunnel, to a configured peer\n")
        }
        let path = request.path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        switch path {
        case "/", "/index.html":
            return HTTPResponse(status: 200, contentType: StatusPageRender.htmlType, body: StatusPageRender.html(page(peer)))
        case "/status.json":
            return HTTPResponse(status: 200, contentType: StatusPageRender.jsonType, body: StatusPageRender.json(page(peer)))
        default:
            return .notFound("your status is at / (HTML) and /status.json")
        }
    }

    /// Requests and refusals since the start (`tunnelctl status`); nil while it does not listen.
    public var counters: StatusPageCounters? {
        guard let e = listening.endpoint else { return nil }
        return StatusPageCounters(address: e.address.description, port: e.port, requests: requests.load(ordering: .relaxed),
                                  refused: refused.load(ordering: .relaxed))
    }

    /// Listens on `endpoint` (an address of the tunnel interface: ``addressProblem(_:)`` checks),
    /// for connections that arrive on `device` only (the tunnel interface: from any other
    /// interface the port is closed, although the address is local; nil: any interface, tests).
    public func start(on endpoint: Endpoint, device: String?, limits: HTTPLimits = HTTPLimits()) throws(SystemError) {
        if case .failed(_, let error, _) = apply(endpoint, device: device, limits: limits) { throw error }
    }

    /// Listens on `endpoint` (nil: off), moving or stopping the listener when it changed (start-up
    /// and every reload: `StatusListen`); `addressProblem` must have passed for the config.
    @discardableResult
    public func apply(_ endpoint: Endpoint?, device: String?, limits: HTTPLimits = HTTPLimits()) -> ReloadableListener.Change {
        listening.apply(endpoint) { e throws(SystemError) in
            try HTTPListener(endpoint: e, device: device, limits: limits) { [self] request in respond(to: request) }
        }
    }

    /// Stops listening (idempotent); returns after the last request was answered.
    public func stop() { listening.stop() }

    /// Why `StatusListen` cannot be served on `iface` (its address is none of the interface's
    /// `Address`es), as the message tunneld exits with; nil when it can (or is off).
    public static func addressProblem(_ iface: InterfaceConfig) -> String? {
        guard let listen = iface.statusListen else { return nil }
        guard !iface.addresses.contains(where: { $0.address == listen.address }) else { return nil }
        let own = iface.addresses.map { Endpoint(address: $0.address, port: listen.port).description }
        return "StatusListen = \(listen) in [Interface] is not an address of interface \(iface.name) "
            + "(Address = \(iface.addresses.map(\.description).joined(separator: ", ")))"
            + "; the status page is served only inside the tunnel: set StatusListen = "
            + (own.isEmpty ? "an address of the interface (add an Address first)" : own.joined(separator: " or "))
            + ", or off"
    }
}
