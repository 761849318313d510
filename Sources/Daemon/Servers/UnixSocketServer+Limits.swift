import ControlProtocol
import Core
import Synchronization

/// What one client may hold of an endpoint, and what the server did there.
extension UnixSocketServer {
    /// Bounds that keep any client, authorised or not, from locking others out.
    public struct Limits: Sendable, Equatable {
        /// Open connections at most, all callers together. A new connection beyond this evicts
        /// the oldest one of the uid holding the most.
        public var maxConnections: Int
        /// Open connections per uid at most. A new connection beyond this evicts the oldest one
        /// of the same uid, so a uid flooding the socket only ever pushes out its own.
        public var maxPerUID: Int
        /// Largest request line (bytes, newline included) of the control protocol; longer gets
        /// `requestTooLarge`. Also what a refused caller may send before it is cut off.
        public var maxRequestBytes: Int
        /// Time a connection has to send its request and take its reply (from accept on the
        /// control socket; per operation on UAPI).
        public var ioTimeout: Duration

        /// Limits (the defaults suit the control socket).
        public init(maxConnections: Int = 512, maxPerUID: Int = 32, maxRequestBytes: Int = ControlWire.maxRequestBytes,
                    ioTimeout: Duration = .seconds(2)) {
            self.maxConnections = max(1, maxConnections)
            self.maxPerUID = max(1, maxPerUID)
            self.maxRequestBytes = max(1, maxRequestBytes)
            self.ioTimeout = ioTimeout
        }
    }

    /// Counters of one endpoint since start (readable from any thread).
    public struct Stats: Sendable, Equatable {
        /// Connections accepted.
        public var accepted: UInt64 = 0
        /// Requests answered by the handler.
        public var served: UInt64 = 0
        /// Connections refused on their `SO_PEERCRED` (before anything was read).
        public var refused: UInt64 = 0
        /// Connections closed to make room under `maxPerUID` / `maxConnections`.
        public var evicted: UInt64 = 0
        /// Connections that did not finish within `ioTimeout`.
        public var timedOut: UInt64 = 0
        /// Requests over `maxRequestBytes`.
        public var tooLarge: UInt64 = 0
        /// Connections open now.
        public var open: Int = 0
        /// Most connections open at once.
        public var peakOpen: Int = 0
    }

    /// One endpoint's `Stats`, shared by the loop, its handlers and readers on other threads.
    final class StatsBox: Sendable {
        private let value = Mutex(Stats())
        func update(_ body: (inout Stats) -> Void) { value.withLock { body(&$0) } }
        func get() -> Stats { value.withLock { $0 } }
    }
}
