import ControlProtocol
import Core

/// One accepted connection, as the socket event loop tracks it.
///
/// Life: `reading` (authorised caller, request arriving, fed to `handler`) → `writing` (reply
/// queued) → `reading` again for protocols with several operations per connection, or closed;
/// a refused caller goes straight to `writing` its refusal, then `draining`: what it may still
/// send is read and thrown away (never parsed) until it closes or its deadline.
final class SocketConnection {
    enum State { case reading, writing, draining }

    /// The socket; -1 once closed (the loop then forgets the connection).
    var fd: Int32
    /// Index of the endpoint it came in on.
    let endpoint: Int
    /// nil when `SO_PEERCRED` could not be read (treated as refused).
    let creds: PeerCredentials?
    /// Accept order (eviction takes the oldest).
    let serial: UInt64
    /// Monotonic ms after which the connection is closed (timed out).
    var deadlineMs: Int64
    var state: State
    /// The protocol; nil for a refused caller.
    let handler: (any SocketProtocolHandler)?
    /// The handler's `progress` when the deadline last started.
    var progress: UInt64 = 0
    /// Bytes drained so far (refused callers only).
    var drained = 0
    /// The reply, how much of it is sent, and what follows it.
    var output: [UInt8] = []
    var sent = 0
    var after = SocketStep.AfterReply.close

    init(fd: Int32, endpoint: Int, creds: PeerCredentials?, serial: UInt64, deadlineMs: Int64,
         handler: (any SocketProtocolHandler)?) {
        self.fd = fd
        self.endpoint = endpoint
        self.creds = creds
        self.serial = serial
        self.deadlineMs = deadlineMs
        self.handler = handler
        state = .reading
    }

    /// The uid the limits count against (refused callers without credentials share one bucket).
    var uid: UInt32 { creds?.uid ?? UInt32.max }
}
