import Core
import Engine
import SystemIO
import Packet
import Synchronization

/// The fake network ``ChannelBind``s live on.
public final class ChannelNetwork: Sendable {
    /// The network does not keep binds alive (each bind keeps its network): no reference cycle.
    private struct WeakBind {
        weak var bind: ChannelBind?
    }
    private struct State {
        var binds: [Endpoint: WeakBind] = [:]
        var nextPort: UInt16 = 40000
        var undeliverable = 0
        var delivered = 0
    }
    private let state = Mutex(State())

    /// An empty network.
    public init() {}

    /// A new bind at `address` (default: 192.0.2.1, TEST-NET-1) on `port` (0 = next free fake port),
    /// queueing at most `queueLimit` datagrams.
    public func bind(address: IPAddress = IPAddress(v4: 0xC000_0201), port: UInt16 = 0, queueLimit: Int = 1024)
        -> ChannelBind
    {
        state.withLock { s in
            var p = port
            if p == 0 {
                p = s.nextPort
                s.nextPort &+= 1
            }
            let b = ChannelBind(endpoint: Endpoint(address: address, port: p), network: self, queueLimit: queueLimit)
            s.binds[b.endpoint] = WeakBind(bind: b)
            return b
        }
    }

    /// Two binds connected to each other on a fresh network (IPv4 192.0.2.1 and 192.0.2.2).
    public static func pair() -> (ChannelBind, ChannelBind) {
        let net = ChannelNetwork()
        return (net.bind(address: IPAddress(v4: 0xC000_0201)), net.bind(address: IPAddress(v4: 0xC000_0202)))
    }

    /// Datagrams sent to an endpoint nobody owns (or a closed one).
    public var undeliverable: Int { state.withLock { $0.undeliverable } }
    /// Datagrams delivered into some bind's queue.
    public var delivered: Int { state.withLock { $0.delivered } }

    func route(_ bytes: [UInt8], from source: Endpoint, to destination: Endpoint) {
        let target = state.withLock { $0.binds[destination]?.bind }
        let ok = target?.deliver(bytes, from: source) ?? false
        state.withLock { s in
            if ok { s.delivered += 1 } else if target == nil { s.undeliverable += 1 }
        }
    }

    func detach(_ endpoint: Endpoint) {
        _ = state.withLock { $0.binds.removeValue(forKey: endpoint) }
    }
}
