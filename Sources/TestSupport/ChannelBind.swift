import Gateway
import Packet
import Synchronization

/// In-memory UDP binds connected through a ``ChannelNetwork`` (like wireguard-go's
/// `conn/bindtest`): a datagram sent to an endpoint lands in the queue of the bind that owns it, with
/// the sender's endpoint as source. Datagrams to unknown endpoints, or to a full queue, are dropped
/// and counted — as a lossy network would.
public final class ChannelBind: DatagramBind {
    /// This bind's address on the fake network.
    public let endpoint: UDPEndpoint
    public var port: UInt16 { endpoint.port }
    let network: ChannelNetwork
    let queueLimit: Int
    private struct State {
        var queue: [(UDPEndpoint, [UInt8])] = []
        var head = 0
        var closed = false
        var droppedFull = 0
        var truncated = 0
    }
    private let state = Mutex(State())
    private let readable: EventNotifier
    private let shutdown: EventNotifier

    init(endpoint: UDPEndpoint, network: ChannelNetwork, queueLimit: Int) {
        self.endpoint = endpoint
        self.network = network
        self.queueLimit = queueLimit
        readable = try! EventNotifier()  // eventfd only fails when out of descriptors: a broken test host
        shutdown = try! EventNotifier()
    }

    /// Datagrams dropped because this bind's queue was full.
    public var droppedFull: Int { state.withLock { $0.droppedFull } }
    /// Datagrams waiting to be received.
    public var pending: Int { state.withLock { $0.queue.count - $0.head } }

    /// Delivers a datagram into this bind's queue; false when full or closed.
    func deliver(_ bytes: [UInt8], from source: UDPEndpoint) -> Bool {
        state.withLock { s in
            guard !s.closed else { return false }
            guard s.queue.count - s.head < queueLimit else {
                s.droppedFull += 1
                return false
            }
            s.queue.append((source, bytes))
            readable.signal()
            return true
        }
    }

    public func receive(into batch: PacketBatch) throws(SystemError) -> Int {
        state.withLock { s in
            var n = 0
            while n < batch.capacity && s.head < s.queue.count && !s.closed {
                let (source, bytes) = s.queue[s.head]
                s.head += 1
                if batch.set(n, bytes: bytes, endpoint: source) { n += 1 } else { s.truncated += 1 }
            }
            if s.head == s.queue.count {
                s.queue.removeAll(keepingCapacity: true)
                s.head = 0
                readable.drain()
            }
            batch.count = n
            return n
        }
    }

    public func send(_ batch: PacketBatch, from start: Int) throws(SystemError) -> Int {
        if state.withLock({ $0.closed }) { return 0 }
        for i in start..<max(start, batch.count) {
            network.route(batch.bytes(i), from: endpoint, to: batch.endpoints[i])
        }
        return max(0, batch.count - start)
    }

    public func waitReadable(timeoutMilliseconds: Int32) throws(SystemError) -> WaitResult {
        if state.withLock({ $0.closed }) { return .closed }
        return try Readiness.wait((readable.descriptor, nil), shutdown, timeoutMilliseconds: timeoutMilliseconds)
    }

    public func close() {
        state.withLock { $0.closed = true }
        shutdown.signal()
        network.detach(endpoint)
    }
}

/// The fake network ``ChannelBind``s live on.
public final class ChannelNetwork: Sendable {
    private struct State {
        var binds: [UDPEndpoint: ChannelBind] = [:]
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
            let b = ChannelBind(endpoint: UDPEndpoint(address: address, port: p), network: self, queueLimit: queueLimit)
            s.binds[b.endpoint] = b
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

    func route(_ bytes: [UInt8], from source: UDPEndpoint, to destination: UDPEndpoint) {
        let target = state.withLock { $0.binds[destination] }
        let ok = target?.deliver(bytes, from: source) ?? false
        state.withLock { s in
            if ok { s.delivered += 1 } else if target == nil { s.undeliverable += 1 }
        }
    }

    func detach(_ endpoint: UDPEndpoint) {
        _ = state.withLock { $0.binds.removeValue(forKey: endpoint) }
    }
}
