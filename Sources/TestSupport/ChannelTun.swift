import Core
import Engine
import SystemIO
import Runtime
import Synchronization

/// An in-memory ``TunDevice`` (like wireguard-go's `tun/tuntest`): packets the test ``inject(_:)``s
/// are what the engine reads; packets the engine writes are what the test ``takeWritten()``s.
/// `waitReadable` is a real `poll(2)` on an eventfd, so an engine thread sleeps and wakes exactly as
/// on the real device.
public final class ChannelTun: TunDevice {
    public let name: String
    public let mtu: Int
    private struct State {
        var toEngine: [[UInt8]] = []
        var head = 0
        var fromEngine: [[UInt8]] = []
        var closed = false
        var truncated = 0
    }
    private let state = Mutex(State())
    private let readable: EventNotifier
    private let written: EventNotifier
    private let shutdown: EventNotifier

    /// A device called `name` with `mtu`.
    public init(name: String = "tvtest0", mtu: Int = 1420) {
        self.name = name
        self.mtu = mtu
        readable = try! EventNotifier()  // eventfd only fails when out of descriptors: a broken test host
        written = try! EventNotifier()
        shutdown = try! EventNotifier()
    }

    // MARK: test side

    /// Queues `packet` for the engine to read (as if the kernel routed it into the interface).
    public func inject(_ packet: [UInt8]) {
        state.withLock { s in
            s.toEngine.append(packet)
            readable.signal()
        }
    }

    /// Removes and returns every packet the engine has written so far, oldest first.
    public func takeWritten() -> [[UInt8]] {
        state.withLock { s in
            defer { s.fromEngine.removeAll(); written.drain() }
            return s.fromEngine
        }
    }

    /// Waits until at least `count` written packets are pending (or the timeout passes) and takes them.
    public func waitWritten(count: Int, timeoutMilliseconds: Int32 = 5000) -> [[UInt8]] {
        var remaining = Int(timeoutMilliseconds)
        while state.withLock({ $0.fromEngine.count }) < count && remaining > 0 {
            _ = try? Readiness.wait((written.descriptor, nil), shutdown, timeoutMilliseconds: 10)
            remaining -= 10
        }
        return takeWritten()
    }

    /// Packets injected but not yet read by the engine.
    public var pendingForEngine: Int { state.withLock { $0.toEngine.count - $0.head } }

    /// Injected packets that were longer than the engine's batch slots (dropped, like the real device).
    public var truncatedReads: Int { state.withLock { $0.truncated } }

    // MARK: engine side (TunDevice)

    public func readPackets(into batch: PacketBatch) throws(SystemError) -> Int {
        state.withLock { s in
            var n = 0
            while n < batch.capacity && s.head < s.toEngine.count && !s.closed {
                let p = s.toEngine[s.head]
                s.head += 1
                if batch.set(n, bytes: p) { n += 1 } else { s.truncated += 1 }
            }
            if s.head == s.toEngine.count {
                s.toEngine.removeAll(keepingCapacity: true)
                s.head = 0
                readable.drain()
            }
            batch.count = n
            return n
        }
    }

    public func writePackets(_ batch: PacketBatch) throws(SystemError) -> Int {
        state.withLock { s in
            if s.closed { return 0 }
            for i in 0..<batch.count { s.fromEngine.append(batch.bytes(i)) }
            if batch.count > 0 { written.signal() }
            return batch.count
        }
    }

    public func waitReadable(timeoutMilliseconds: Int32) throws(SystemError) -> WaitResult {
        try Readiness.wait((readable.descriptor, nil), shutdown, timeoutMilliseconds: timeoutMilliseconds)
    }

    public func close() {
        state.withLock { $0.closed = true }
        shutdown.signal()
    }
}
