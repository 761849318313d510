import Core
import CShims
import Glibc
import Runtime

/// Turns SIGHUP/SIGTERM/SIGINT (or any set) into readable bytes on a self-pipe, so the daemon's
/// control thread waits for them with `poll` like for anything else.
///
/// A self-pipe rather than `signalfd(2)`: signalfd only works when the signals are blocked in
/// *every* thread, which the Swift runtime's and our own threads make hard to guarantee; a handler
/// that `write(2)`s one byte (async-signal-safe) works whichever thread the kernel picks.
/// Handlers are process-wide: create one watcher per process.
public final class SignalWatcher: Sendable {
    /// The pipe's read end; readable when a signal arrived.
    public let descriptor: Int32

    /// Installs handlers for `signals` (e.g. `[SIGHUP, SIGTERM, SIGINT]`).
    public init(signals: [Int32]) throws(SystemError) {
        descriptor = try Sys.shim("sigaction") { signals.withUnsafeBufferPointer { tv_signal_pipe_install($0.baseAddress, Int32($0.count)) } }
    }

    /// The next pending signal number, or nil when none is pending.
    public func next() throws(SystemError) -> Int32? {
        var byte: UInt8 = 0
        guard let n = try Sys.callNonblocking("read(signal pipe)", { Glibc.read(descriptor, &byte, 1) }), n == 1 else {
            return nil
        }
        return Int32(byte)
    }

    /// Waits for a signal up to `timeoutMilliseconds` (-1 = forever) and returns it, or nil on timeout
    /// or when `shutdown` fires.
    public func wait(timeoutMilliseconds: Int32, shutdown: EventNotifier) throws(SystemError) -> Int32? {
        if let s = try next() { return s }
        guard try Readiness.wait((descriptor, nil), shutdown, timeoutMilliseconds: timeoutMilliseconds) == .readable
        else { return nil }
        return try next()
    }

    /// Restores the default action for `signals` (the pipe stays; pending bytes remain readable).
    public static func restoreDefaults(_ signals: [Int32]) {
        for s in signals { _ = tv_signal_default(s) }
    }
}
