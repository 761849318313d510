import ControlProtocol
import Core

/// The control protocol on one connection (framing: `ControlWire`): one request line, up to
/// `maxRequestBytes`, answered by the handler; the connection closes after the reply. An
/// oversized request gets `requestTooLarge`, bad JSON `malformedRequest`, an unknown request
/// type `unknownRequest` (the handler never sees them).
final class ControlProtocolHandler: SocketProtocolHandler {
    private let creds: PeerCredentials
    private let limits: UnixSocketServer.Limits
    private let stats: UnixSocketServer.StatsBox
    private let handler: ControlServer.Handler
    /// Bytes of the request line so far.
    private var input: [UInt8] = []
    private var received = 0

    init(creds: PeerCredentials, limits: UnixSocketServer.Limits, stats: UnixSocketServer.StatsBox,
         handler: @escaping ControlServer.Handler) {
        self.creds = creds
        self.limits = limits
        self.stats = stats
        self.handler = handler
    }

    var readLimit: Int { max(1, limits.maxRequestBytes - received + 1) }
    var progress: UInt64 { 0 }

    func received(_ bytes: UnsafeRawBufferPointer) -> SocketStep {
        let scanFrom = input.count
        input.append(contentsOf: bytes)
        received += bytes.count
        if let nl = input[scanFrom...].firstIndex(of: UInt8(ascii: "\n")) {
            let line = Array(input[..<nl])
            input = []
            return reply(answer(line))
        }
        if received >= limits.maxRequestBytes {
            input = []
            stats.update { $0.tooLarge += 1 }
            return reply(.failure(.requestTooLarge, "request larger than \(limits.maxRequestBytes) bytes"))
        }
        return .read
    }

    func endOfInput() -> SocketStep {
        input.isEmpty ? .close : reply(.failure(.malformedRequest, "request not terminated by a newline"))
    }

    func resume() -> SocketStep { .close }  // one exchange per connection

    func timedOut() -> [UInt8]? {
        ControlWire.encode(.failure(.malformedRequest, "no complete request within \(SocketIO.ms(limits.ioTimeout)) ms"))
    }

    private func reply(_ response: ControlResponse) -> SocketStep { .reply(ControlWire.encode(response), then: .close) }

    private func answer(_ line: [UInt8]) -> ControlResponse {
        switch ControlWire.decodeRequest(line) {
        case .failure(let e): return .error(e)
        case .success(.unknown(let type)):
            return .failure(.unknownRequest, "unknown request '\(type)'; this daemon knows status, peers, policyReload, policyShow, kick")
        case .success(let request):
            let reply = handler(request, creds)
            stats.update { $0.served += 1 }
            return reply
        }
    }
}
