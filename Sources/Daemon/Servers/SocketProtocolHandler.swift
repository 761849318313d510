import ControlProtocol
import Core

/// One connection's protocol as the socket event loop drives it (`UnixSocketServer`): the loop
/// moves bytes and keeps time; the handler turns what arrived into the next step. Handlers run
/// on the loop's thread and never touch the socket.
protocol SocketProtocolHandler: AnyObject {
    /// Most bytes the loop may read for this connection now.
    var readLimit: Int { get }
    /// Grows while a long request keeps arriving; when it changes on an endpoint with
    /// per-operation deadlines, the connection's deadline starts again.
    var progress: UInt64 { get }
    /// Bytes arrived.
    func received(_ bytes: UnsafeRawBufferPointer) -> SocketStep
    /// The peer closed its side before the handler had a complete request.
    func endOfInput() -> SocketStep
    /// The reply queued with `.next` is written: handle what is buffered.
    func resume() -> SocketStep
    /// The deadline passed while reading: the reply to send, best effort, before closing.
    func timedOut() -> [UInt8]?
}

/// What the event loop does next with a connection.
enum SocketStep {
    /// Wait for more bytes.
    case read
    /// Send these bytes, then do `then`.
    case reply([UInt8], then: AfterReply)
    /// Close at once, without a reply.
    case close

    /// After a reply is written.
    enum AfterReply {
        /// Close the connection.
        case close
        /// Shut down the sending side and read what the peer still sends, unparsed, until it
        /// closes (so it gets the reply rather than a broken pipe).
        case drain
        /// Go on with the next request on the same connection (`resume`).
        case next
    }
}
