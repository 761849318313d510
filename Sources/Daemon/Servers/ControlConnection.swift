import ControlProtocol
import Core
/// One accepted connection of the control server, as its event loop tracks it.
///
/// Life: `reading` (authorised caller, request line arriving) → `writing` (reply queued) →
/// closed; a refused caller goes straight to `writing` its `permissionDenied` reply, then
/// `draining`: the request it may still be sending is read and thrown away (never parsed) until
/// it closes or its deadline, so it gets the reply rather than a broken pipe.
final class ControlConnection {
    enum State { case reading, writing, draining }

    /// The socket; -1 once closed (the loop then forgets the connection).
    var fd: Int32
    /// nil when `SO_PEERCRED` could not be read (treated as refused).
    let creds: PeerCredentials?
    /// Accept order (eviction takes the oldest).
    let serial: UInt64
    /// Monotonic ms after which the connection is closed (timed out).
    let deadlineMs: Int64
    var state: State
    /// Bytes of the request line so far (only while `reading`).
    var input: [UInt8] = []
    /// Bytes read in total (request or drained junk).
    var received = 0
    /// The reply, and how much of it is sent.
    var output: [UInt8] = []
    var sent = 0
    /// Close after the reply instead of draining.
    var closeAfterWrite = true

    init(fd: Int32, creds: PeerCredentials?, serial: UInt64, deadlineMs: Int64, state: State) {
        self.fd = fd
        self.creds = creds
        self.serial = serial
        self.deadlineMs = deadlineMs
        self.state = state
    }

    /// The uid the limits count against (refused callers without credentials share one bucket).
    var uid: UInt32 { creds?.uid ?? UInt32.max }
}
