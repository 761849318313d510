import Core
import Config
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Runtime
import Store
import Synchronization

/// `tunnelctl audit start LABEL | stop | mark LABEL | list [--since]` (tunnelctl(8)).
///
/// tunnelctl writes audit sessions and markers into the store itself, daemon running or not
/// (the daemon's writer and tunnelctl are two connections on one WAL file; `CLIStore` waits for
/// the daemon's lock and retries). Also home of the helpers the history commands share
/// (`cliNow`, `parseSince`).
extension Tunnelctl {
    static let runAuditStart: Command.Body = { opts, console in
        let label = try labelWords(&opts, "audit start LABEL")
        let (store, _) = try openStore(opts)
        try opts.finish()
        let now = cliNow()
        let a = try CLIStore.call { try store.startAudit(label: label, at: now) }
        if opts[.json] { console.print(try encodeJSON(AuditSessionRow(a))) } else {
            console.print("audit session \(a.id) '\(a.label)' started at \(dateTimeText(a.startedAt))")
        }
        return .ok
    }

    static let runAuditStop: Command.Body = { opts, console in
        let (store, _) = try openStore(opts)
        try opts.finish()
        let a = try CLIStore.call { try store.stopAudit(at: cliNow()) }
        if opts[.json] { console.print(try encodeJSON(AuditSessionRow(a))) } else {
            let lasted = remainingText(((a.endedAt ?? a.startedAt) - a.startedAt) / 1000)
            console.print("audit session \(a.id) '\(a.label)' stopped at \(dateTimeText(a.endedAt ?? a.startedAt)) (lasted \(lasted))")
        }
        return .ok
    }

    static let runAuditMark: Command.Body = { opts, console in
        let label = try labelWords(&opts, "audit mark LABEL [--detail TEXT]")
        let (store, _) = try openStore(opts)
        try opts.finish()
        let m = try CLIStore.call { try store.addMarker(MarkerInput(at: cliNow(), label: label, kind: .manual, detail: opts[.detail])) }
        if opts[.json] { console.print(try encodeJSON(MarkerRow(m))) } else {
            let session = m.auditSessionId.map { " (audit session \($0))" } ?? ""
            console.print("marker \(m.id) '\(m.label)' at \(dateTimeText(m.at))\(session)")
        }
        return .ok
    }

    static let runAuditList: Command.Body = { opts, console in
        let json = opts[.json]
        let from = opts[.since] ?? .min
        let (history, config) = try openHistory(opts)
        try opts.finish()
        guard let store = history else {
            if json {
                console.error("note: \(noHistoryYet(config))")
                console.print(try encodeJSON(AuditListJSON(auditSessions: [], markers: [])))
            } else {
                console.print(noHistoryYet(config))
            }
            return .ok
        }
        let (audits, markers) = try CLIStore.call { try store.connection.read { (try store.audits(since: from), try store.markers(since: from)) } }
        if json {
            console.print(try encodeJSON(AuditListJSON(auditSessions: audits.map(AuditSessionRow.init), markers: markers.map { MarkerRow($0) })))
            return .ok
        }
        console.print(renderAuditList(audits, markers))
        return .ok
    }

    /// The remaining positional words as one label (`audit mark printer test` → "printer test").
    static func labelWords(_ opts: inout ParsedOptions, _ usage: String) throws -> String {
        var words: [String] = []
        while let w = opts.peek, !isOption(w) { words.append(w); _ = opts.next() }
        let label = words.joined(separator: " ").trimmedSpaces()
        guard !label.isEmpty else { throw CLIError.usage("a label is needed: tunnelctl \(usage)") }
        guard label.utf8.count <= 1000 else { throw CLIError.usage("the label is longer than 1000 bytes") }
        return label
    }

    static func renderAuditList(_ audits: [AuditSession], _ markers: [Marker]) -> String {
        var out: [String] = []
        if audits.isEmpty {
            out.append("no audit sessions")
        } else {
            var rows = [["ID", "STARTED", "ENDED", "LABEL"]]
            for a in audits {
                rows.append([String(a.id), dateTimeText(a.startedAt), a.endedAt.map(dateTimeText) ?? "(open)", a.label])
            }
            out.append("audit sessions:")
            out.append(table(rows).split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
        }
        if markers.isEmpty {
            out.append("no markers")
        } else {
            var rows = [["ID", "AT", "KIND", "AUDIT", "LABEL"]]
            for m in markers {
                let label = m.detail.map { "\(m.label) (\(markerDetailText($0, m.kind)))" } ?? m.label
                rows.append([String(m.id), dateTimeText(m.at), m.kind.rawValue, m.auditSessionId.map(String.init) ?? "-", label])
            }
            out.append("markers:")
            out.append(table(rows).split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
        }
        return out.joined(separator: "\n")
    }

    // MARK: shared store helpers (audit, timeline, retention, prune)

    /// Fixed "now" (Unix epoch ms) for golden tests; nil = the system clock.
    static let clockOverride = Mutex<Int64?>(nil)

    /// Now, Unix epoch milliseconds: the test override, else `TUNNELCTL_NOW` (an ISO 8601 time
    /// with a zone, or epoch ms; docs/session.md — `run` refuses any other value before a command
    /// runs), else the system clock.
    static func cliNow() -> Int64 {
        if let t = clockOverride.withLock({ $0 }) { return t }
        if let text = ProcessInfo.processInfo.environment["TUNNELCTL_NOW"], let t = nowOverride(text) { return t }
        return Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
    }

    /// `TUNNELCTL_NOW`'s value as epoch ms: ISO 8601 with a zone, or an integer of milliseconds.
    static func nowOverride(_ text: String) -> Int64? {
        let t = text.trimmedSpaces()
        return Int64(t) ?? TimeText.parseISO(t)
    }

    /// The store named by `--config` for writing (created when missing; `CLIStore`).
    static func openStore(_ opts: ParsedOptions) throws -> (StateStore, TunnelConfig) {
        let config = try cliConfig(opts)
        return (try CLIStore.write(config), config)
    }

    /// For read commands: the store named by `--config`, or nil when it does not exist yet
    /// (callers say `noHistoryYet`; `CLIStore`).
    static func openHistory(_ opts: ParsedOptions) throws -> (StateStore?, TunnelConfig) {
        let config = try cliConfig(opts)
        return (try CLIStore.read(config), config)
    }

    /// `--since` (every command that takes it): a duration back from now (`10m`, `1h`, `7d`),
    /// `forever`, or a date `YYYY-MM-DD[THH:MM[:SS]]` in local time (UTC with a trailing `Z`).
    /// Returns epoch ms (`Int64.min` for `forever`).
    static func parseSince(_ text: String, now: Int64) throws -> Int64 {
        do {
            return try TimeText.since(text, now: now, zone: cliTimeZone)
        } catch {
            throw CLIError.usage("--since \(error)")
        }
    }
}
