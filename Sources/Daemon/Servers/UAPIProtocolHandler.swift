import ControlProtocol
import Core

/// The WireGuard UAPI on one connection: `UAPIStream` turns the bytes into operations, this
/// answers each (`get` for `get=1`, `set` for a complete, well-formed `set=1`) with its errno
/// line (`UAPICodec`), one operation at a time, and logs every failed one.
final class UAPIProtocolHandler: SocketProtocolHandler {
    private var stream: UAPIStream
    private let get: UAPIServer.GetHandler
    private let set: UAPIServer.SetHandler
    private let log: UAPIServer.ErrorLog?

    init(maxOperationBytes: Int, get: @escaping UAPIServer.GetHandler, set: @escaping UAPIServer.SetHandler,
         log: UAPIServer.ErrorLog?) {
        stream = UAPIStream(maxOperationBytes: maxOperationBytes, maxLineBytes: UAPIServer.maxLineBytes)
        self.get = get
        self.set = set
        self.log = log
    }

    /// One read's worth: lines are assembled in the stream's buffer.
    var readLimit: Int { 65536 }
    var progress: UInt64 { stream.progress }

    func received(_ bytes: UnsafeRawBufferPointer) -> SocketStep {
        stream.append(bytes)
        return resume()
    }

    /// A connection closed mid-operation is dropped: a `set=1` without its blank line is never
    /// applied.
    func endOfInput() -> SocketStep { .close }

    func resume() -> SocketStep {
        guard let event = stream.next() else { return stream.isClosed ? .close : .read }
        switch event {
        case .get:
            return .reply(Array((UAPICodec.encodeGet(get()) + UAPICodec.statusLine(nil)).utf8), then: .next)
        case .set(let request):
            let failure = set(request)
            if let failure { log?(failure) }
            return .reply(Array(UAPICodec.statusLine(failure).utf8), then: .next)
        case .failed(let e):
            log?(e)
            return .reply(Array(UAPICodec.statusLine(e).utf8), then: .next)
        case .tooLarge(let e):
            log?(e)
            return .reply(Array(UAPICodec.statusLine(e).utf8), then: .close)
        case .close:
            return .close
        }
    }

    func timedOut() -> [UInt8]? { nil }
}
