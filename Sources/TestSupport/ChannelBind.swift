import Core
import Engine
import SystemIO
import Packet
import Runtime
import Synchronization

/// In-memory UDP binds connected through a ``ChannelNetwork`` (like wireguard-go's
/// `conn/bindtest`): a datagram sent to an endpoint lands in the queue of the bind that owns it, with
/// the sender's endpoint as source. Datagrams to unknown endpoints, or to a full queue, are dropped
/// and counted — as a lossy network would.
public final class ChannelBind: DatagramBind {
    /// This bind's address on the fake network.
    public let endpoint: Endpoint
    public var port: UInt16 { endpoint.port }
    let network: ChannelNetwork
    let queueLimit: Int
    private struct State {
        var queue: [(Endpoint, [UInt8])] = []
        var head = 0
        var closed = false
        var droppedFull = 0
        var truncated = 0
    }
    private let state = Mutex(State())
    private let readable: EventNotifier
    private let shutdown: EventNotifier

    init(endpoint: Endpoint, network: ChannelNetwork, queueLimit: Int) {
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
    func deliver(_ bytes: [UInt8], from source: Endpoint) -> Bool {
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
