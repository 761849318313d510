import CSystemd
import Core
import Glibc
import Synchronization

/// A small logger for the daemon: one line per message on stderr, prefixed with the syslog
/// priority in angle brackets (`<6>` info …) so journald files each line at its level
/// (sd-daemon(3) "SD_INFO" prefixes) — but only for a log collector: not when stderr is a
/// terminal (`tunneld --check-config` run by a person), unless JOURNAL_STREAM says it is the
/// journal. Not under journald, every line starts with its UTC time (journald stamps its own).
/// Structured events (`DaemonEvent`) go to the journal with their fields (sd_journal_sendv)
/// when stderr is the journal, else they are one stderr line ending in `KEY=value` fields.
/// Libraries take the logger they are given; tests pass a capturing sink.
public struct Logger: Sendable {
    /// Syslog priorities (RFC 5424 §6.2.1), most severe first.
    public enum Level: Int32, Sendable, Comparable {
        case error = 3, warning = 4, notice = 5, info = 6, debug = 7
        public static func < (a: Level, b: Level) -> Bool { a.rawValue > b.rawValue }
    }

    /// Messages below this level are not written.
    public var minimum: Level
    let sink: @Sendable (Level, String) -> Void
    let eventSink: (@Sendable (DaemonEvent) -> Void)?

    /// A logger writing to `sink`; events go to `events`, or to `sink` as their `line`.
    public init(minimum: Level = .info, sink: @escaping @Sendable (Level, String) -> Void,
                events: (@Sendable (DaemonEvent) -> Void)? = nil)
    {
        self.minimum = minimum
        self.sink = sink
        eventSink = events
    }

    /// Writes `<N>message` lines to stderr, or plain `message` lines when stderr is a terminal
    /// (see `usesPriorityPrefixes`); one `write(2)` per line, so threads never interleave. `fd`
    /// is for tests.
    /// `timestamps` (default: unless stderr is the journal) starts each line with its UTC time.
    public static func standardError(minimum: Level = .info, fd: Int32 = 2, timestamps: Bool? = nil) -> Logger {
        let stream = getenv("JOURNAL_STREAM").map { String(cString: $0) }
        let prefixed = usesPriorityPrefixes(fd: fd, journalStream: stream != nil)
        let journal = stream.map { isJournal(fd: fd, journalStream: $0) } ?? false
        let stamped = timestamps ?? !journal
        let write: @Sendable (Level, String) -> Void = { level, message in
            var line = prefixed ? "<\(level.rawValue)>" : ""
            if stamped { line += TimeText.iso(SystemClock().wallMilliseconds()) + " " }
            line += message
            line.append("\n")
            line.withUTF8 { _ = try? Sys.writeAll(fd, UnsafeRawBufferPointer($0), "stderr") }
        }
        guard journal else { return Logger(minimum: minimum, sink: write) }
        return Logger(minimum: minimum, sink: write) { event in
            if !sendToJournal(event) { write(Level(rawValue: event.priority) ?? .notice, event.line) }
        }
    }

    /// Whether `fd` is the journal's stream: JOURNAL_STREAM (`device:inode`, systemd.exec(5)) names
    /// the file `fd` is, so a child whose stderr was redirected is not fooled by an inherited variable.
    public static func isJournal(fd: Int32, journalStream: String) -> Bool {
        let parts = journalStream.split(separator: ":")
        guard parts.count == 2, let dev = UInt64(parts[0]), let ino = UInt64(parts[1]) else { return false }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return false }
        return UInt64(st.st_dev) == dev && UInt64(st.st_ino) == ino
    }

    /// The journal entry of `event`: `MESSAGE=`, `PRIORITY=`, `SYSLOG_IDENTIFIER=tunneld`, then its fields.
    public static func journalFields(_ event: DaemonEvent) -> [String] {
        ["MESSAGE=" + event.message, "PRIORITY=\(event.priority)", "SYSLOG_IDENTIFIER=tunneld"]
            + event.fields.map { "\($0.key)=\($0.value)" }
    }

    /// Sends `event` with sd_journal_sendv; false when the journal refused it.
    static func sendToJournal(_ event: DaemonEvent) -> Bool {
        var buffer: [UInt8] = []
        var ranges: [Range<Int>] = []
        for f in journalFields(event) {
            let start = buffer.count
            buffer += f.utf8
            ranges.append(start..<buffer.count)
        }
        return buffer.withUnsafeMutableBytes { raw in
            let vectors = ranges.map { iovec(iov_base: raw.baseAddress! + $0.lowerBound, iov_len: $0.count) }
            return sd_journal_sendv(vectors, Int32(vectors.count)) >= 0
        }
    }

    /// Whether lines written to `fd` carry `<N>` priority prefixes: yes when systemd connected
    /// stderr to the journal (`journalStream`: JOURNAL_STREAM is set) or `fd` is not a terminal
    /// (a pipe or file read by a supervisor); no for a person at a terminal.
    public static func usesPriorityPrefixes(fd: Int32, journalStream: Bool) -> Bool {
        journalStream || isatty(fd) == 0
    }

    /// Logs a structured event (journal fields, or a stderr line ending in them).
    public func event(_ e: DaemonEvent) {
        let level = Level(rawValue: e.priority) ?? .notice
        guard level >= minimum else { return }
        if let eventSink { eventSink(e) } else { sink(level, e.line) }
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
