import Core
import Synchronization
import Runtime
import SystemIO

/// An HTTP listener that one config key switches on, off or moves (`StatusListen`,
/// `MetricsListen`): ``apply(_:open:)`` runs at start-up and again on every reload, so what listens
/// is what the file says, without a restart. A new address that cannot be bound leaves the old
/// listener serving, and the change says so; nothing is stopped before its successor listens.
public final class ReloadableListener: Sendable {
    /// What one ``apply(_:open:)`` did, for the log and the reload reply.
    public enum Change: Sendable, CustomStringConvertible {
        case unchanged
        case started(Endpoint)
        case moved(from: Endpoint, to: Endpoint)
        case stopped(Endpoint)
        /// `wanted` could not be bound; `keeping` still serves (nil: nothing does).
        case failed(wanted: Endpoint, error: SystemError, keeping: Endpoint?)

        public var description: String {
            switch self {
            case .unchanged: return "unchanged"
            case .started(let e): return "serving on \(e)"
            case .moved(let from, let to): return "moved from \(from) to \(to)"
            case .stopped(let e): return "stopped (was \(e))"
            case .failed(let wanted, let error, let keeping):
                return "cannot listen on \(wanted): \(error); "
                    + (keeping.map { "still serving on \($0)" } ?? "not serving")
            }
        }
    }

    /// The config key, for messages (`StatusListen`).
    public let key: String
    /// The configured endpoint (as written: port 0 stays 0) and the listener serving it.
    private let state = Mutex<(configured: Endpoint, listener: HTTPListener)?>(nil)

    public init(key: String) { self.key = key }

    /// The address and port it listens on now (the bound port when 0 was configured); nil when off.
    public var endpoint: Endpoint? { state.withLock { $0?.listener.endpoint } }

    /// Makes it listen on `wanted` (nil: off). `open` binds a new listener; it is called only when
    /// `wanted` differs from the configured endpoint, and the old listener stops only after the
    /// new one listens — except when the new one needs the old one's port (then it is freed first,
    /// and bound again when the new one still cannot listen).
    @discardableResult
    public func apply(_ wanted: Endpoint?, open: (Endpoint) throws(SystemError) -> HTTPListener) -> Change {
        let current = state.withLock { $0 }
        if current?.configured == wanted { return .unchanged }
        guard let wanted else {
            state.withLock { $0 = nil }
            current?.listener.stop()
            return current.map { .stopped($0.listener.endpoint) } ?? .unchanged
        }
        var next: HTTPListener
        do {
            next = try open(wanted)
        } catch {
            // The same port on an overlapping address (10.99.0.1:80 → 0.0.0.0:80): free it and
            // try once more; when that fails too, the old endpoint is bound again if it can be.
            guard let current, current.listener.endpoint.port == wanted.port else {
                return .failed(wanted: wanted, error: error, keeping: current?.listener.endpoint)
            }
            state.withLock { $0 = nil }
            current.listener.stop()
            do {
                next = try open(wanted)
            } catch {
                let back = try? open(current.configured)
                if let back { state.withLock { $0 = (current.configured, back) } }
                return .failed(wanted: wanted, error: error, keeping: back?.endpoint)
            }
            state.withLock { $0 = (wanted, next) }
            return .moved(from: current.listener.endpoint, to: next.endpoint)
        }
        state.withLock { $0 = (wanted, next) }
        guard let current else { return .started(next.endpoint) }
        current.listener.stop()
        return .moved(from: current.listener.endpoint, to: next.endpoint)
    }

    /// Stops listening (idempotent); returns after the last request was answered.
    public func stop() { apply(nil) { _ throws(SystemError) in fatalError("not called for nil") } }
}
