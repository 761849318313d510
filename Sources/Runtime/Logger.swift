import Core
import Runtime
import Glibc
import Synchronization

/// A small logger for the daemon: one line per message on stderr, prefixed with the syslog
/// priority in angle brackets (`<6>` info …) so journald files each line at its level
/// (sd-daemon(3) "SD_INFO" prefixes) — but only for a log collector: not when stderr is a
/// terminal (`tunneld --check-config` run by a person), unless JOURNAL_STREAM says it is the
/// journal. Libraries take the logger they are given; tests pass a capturing sink.
public struct Logger: Sendable {
    /// Syslog priorities (RFC 5424 §6.2.1), most severe first.
    public enum Level: Int32, Sendable, Comparable {
        case error = 3, warning = 4, notice = 5, info = 6, debug = 7
        public static func < (a: Level, b: Level) -> Bool { a.rawValue > b.rawValue }
    }

    /// Messages below this level are not written.
    public var minimum: Level
    let sink: @Sendable (Level, String) -> Void

    /// A logger writing to `sink`.
    public init(minimum: Level = .info, sink: @escaping @Sendable (Level, String) -> Void) {
        self.minimum = minimum
        self.sink = sink
    }

    /// Writes `<N>message` lines to stderr, or plain `message` lines when stderr is a terminal
    /// (see `usesPriorityPrefixes`); one `write(2)` per line, so threads never interleave. `fd`
    /// is for tests.
    public static func standardError(minimum: Level = .info, fd: Int32 = 2) -> Logger {
        let prefixed = usesPriorityPrefixes(fd: fd, journalStream: getenv("JOURNAL_STREAM") != nil)
        return Logger(minimum: minimum) { level, message in
            var line = prefixed ? "<\(level.rawValue)>" + message : message
            line.append("\n")
            line.withUTF8 { _ = try? Sys.writeAll(fd, UnsafeRawBufferPointer($0), "stderr") }
        }
    }

    /// Whether lines written to `fd` carry `<N>` priority prefixes: yes when systemd connected
    /// stderr to the journal (`journalStream`: JOURNAL_STREAM is set) or `fd` is not a terminal
    /// (a pipe or file read by a supervisor); no for a person at a terminal.
    public static func usesPriorityPrefixes(fd: Int32, journalStream: Bool) -> Bool {
        journalStream || isatty(fd) == 0
    }

    public func log(_ level: Level, _ message: @autoclosure () -> String) {
        if level >= minimum { sink(level, message()) }  // `<` orders by severity: debug < … < error
    }
    public func error(_ m: @autoclosure () -> String) { log(.error, m()) }
    public func warning(_ m: @autoclosure () -> String) { log(.warning, m()) }
    public func notice(_ m: @autoclosure () -> String) { log(.notice, m()) }
    public func info(_ m: @autoclosure () -> String) { log(.info, m()) }
    public func debug(_ m: @autoclosure () -> String) { log(.debug, m()) }
}

/// Collects log lines in memory (tests).
public final class LogCapture: Sendable {
    private let lines = Mutex<[String]>([])
    public init() {}
    public var logger: Logger { Logger(minimum: .debug) { [self] level, m in lines.withLock { $0.append("<\(level.rawValue)>\(m)") } } }
    public var all: [String] { lines.withLock { $0 } }
}
