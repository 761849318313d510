import Capture
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

/// `tunnelctl prune [--dry-run]` (docs/store.md): removes what the retention
/// settings say, family by family, in short batches (`Pruner`), deletes pcap files beyond the
/// capture limits (`CaptureFiles.prune` on `StateDirectory/capture`), gives the freed pages back
/// to the file system (incremental vacuum) and reports rows and bytes per family. On a terminal,
/// a run longer than a second shows its progress on stderr.
extension Tunnelctl {
    static let runPrune: Command.Body = { opts, console in
        let json = opts[.json]
        let dryRun = opts[.dryRun]  // -n is rewritten to --dry-run by the option check
        let history: StateStore?
        let config: TunnelConfig
        if dryRun {
            (history, config) = try openHistory(opts)
        } else {
            (history, config) = try openStore(opts)
        }
        try opts.finish()
        guard let store = history else {
            let now = cliNow()
            if json {
                console.error("note: \(noHistoryYet(config))")
                console.print(try encodeJSON(PruneJSON(dryRun: true, now: JSONTime(ms: now), families: [], rows: 0, bytesReclaimed: 0, pcap: nil)))
            } else {
                console.print("dry run: nothing to prune: \(noHistoryYet(config))")
            }
            return .ok
        }
        var decoded: SettingsDecoding
        do {
            decoded = try CLIStore.call { try store.settings() }
        } catch let e as CLIError {
            throw CLIError.failure("\(e.message)\nnothing was pruned: fix the row with 'tunnelctl retention set KEY=VALUE' (or check 'tunnelctl retention show')")
        }
        // With a shared store its retention is the one every gateway prunes with (a row there
        // that is not JSON prunes nothing); a store that cannot be read leaves this gateway's
        // copy, the last shared retention tunneld read, for the local prune, and fails after it.
        var shared: (any SharedState)?
        var sharedError: (any Error)?
        if config.interface.store.isShared {
            do {
                let state = try config.interface.store.open(passFile: config.interface.storePassFile, readOnly: dryRun)!
                if let row = try state.settings() {
                    do { decoded = merged(shared: try decodeSharedRow(row, config.interface.store.text), local: decoded) } catch let e as CLIError {
                        throw CLIError.failure("\(e.message)\nnothing was pruned")
                    }
                }
                shared = state
            } catch let e as CLIError {
                throw e
            } catch {
                sharedError = error
                console.error("note: cannot read the shared store's retention (\(error)); this gateway's copy (the last one tunneld read) prunes the local store")
            }
        }
        if !json {
            for d in decoded.defaulted where !decoded.wasEmpty {
                console.error("note: \(d.path) is \(d.reason); using its factory value")
            }
        }
        let now = cliNow()
        var report = try runPrune(store: store, config: config, retention: decoded.settings.retention, now: now,
                                  dryRun: dryRun, progress: console.isTerminal ? TerminalProgress() : nil)
        // The shared store: the same cut-offs, every gateway's rows, bounded
        // statements. The local prune is done either way; a shared store that cannot be pruned
        // is an error after it, never a silent success.
        if !dryRun, config.interface.store.isShared {
            do {
                if let sharedError { throw sharedError }
                let shared = shared!  // opened above when there was no error
                let n = try shared.pruneHistory(cutoffs: HistoryCutoffs(retention: decoded.settings.retention, now: now),
                                                batch: HistoryCutoffs.rowsPerStatement)
                report.shared = PruneJSON.Shared(backend: shared.backend, flows: n.flows, sessions: n.sessions, refusals: n.refusals,
                                                 markers: n.markers, rows: n.total)
            } catch {
                if json { console.print(try encodeJSON(report)) } else { console.print(renderPrune(report, retention: decoded.settings.retention)) }
                throw CLIError.failure("the local store was pruned, the shared store \(config.interface.store.text) was not: \(error)")
            }
        }
        if json {
            console.print(try encodeJSON(report))
        } else {
            console.print(renderPrune(report, retention: decoded.settings.retention))
        }
        return .ok
    }

    /// Runs the prune and measures bytes per family: pages the family's deletes freed (real run)
    /// or its share of its table's and indexes' pages (dry run, an estimate).
    static func runPrune(store: StateStore, config: TunnelConfig, retention: RetentionSettings, now: Int64, dryRun: Bool,
                         progress: TerminalProgress?) throws -> PruneJSON {
        let c = store.connection
        let pageSize = try CLIStore.call { try c.scalarInt("PRAGMA page_size") ?? 4096 }
        var estimates: [PruneFamily: (bytes: Int64, rows: Int64)] = [:]
        if dryRun {
            for f in PruneFamily.allCases {
                let table = f == .auditSessions ? "audit_sessions" : f.rawValue
                let bytes = (try? c.scalarInt("SELECT sum(pgsize) FROM dbstat WHERE name IN (SELECT name FROM sqlite_master WHERE tbl_name = '\(table)')")) ?? nil
                let rows = try CLIStore.call { try c.scalarInt("SELECT count(*) FROM \(table)") ?? 0 }
                if let bytes { estimates[f] = (bytes, rows) }
            }
        }
        var freed: [PruneFamily: Int64] = [:]
        var lastFree: Int64 = (try? c.scalarInt("PRAGMA freelist_count")) ?? 0
        let report = try CLIStore.call {
            try Pruner(store: store).run(
                retention: retention, now: now, dryRun: dryRun,
                capture: { try CaptureFiles.prune(directory: config.interface.stateDirectory + "/capture", $0, keepNewest: true) },
                progress: { p in
                    if !dryRun, let free = try? c.scalarInt("PRAGMA freelist_count") {
                        freed[p.family, default: 0] += max(0, free - lastFree) * pageSize
                        lastFree = free
                    }
                    progress?.update(p)
                })
        }
        progress?.finish()
        var families: [PruneJSON.Family] = []
        for f in PruneFamily.allCases {
            let rows = report.rows[f] ?? 0
            var bytes: Int64? = freed[f] ?? 0
            if dryRun {
                bytes = estimates[f].map { $0.rows > 0 ? $0.bytes * Int64(rows) / $0.rows : 0 }
            }
            let age = retention.maxAge(for: f)
            families.append(PruneJSON.Family(
                family: f.rawValue, rows: rows, bytes: bytes, maxAgeSeconds: age.map(JSONSeconds.init(ms:)),
                cutoff: report.cutoffs[f].map(JSONTime.init(ms:))))
        }
        return PruneJSON(
            dryRun: dryRun, now: JSONTime(ms: now), families: families, rows: report.totalRows,
            bytesReclaimed: report.bytesReclaimed,
            pcap: report.capture.map {
                PruneJSON.Pcap(files: $0.files, bytes: $0.bytes, maxBytes: retention.pcapMaxBytes,
                               maxAgeSeconds: retention.pcapMaxAgeMs.map(JSONSeconds.init(ms:)))
            })
    }

    static func renderPrune(_ r: PruneJSON, retention: RetentionSettings) -> String {
        var rows = [["FAMILY", "ROWS", r.dryRun ? "BYTES (est.)" : "BYTES", "KEPT", "OLDER THAN"]]
        for f in r.families {
            rows.append([f.family, String(f.rows), f.bytes.map { bytesText(UInt64(max(0, $0))) } ?? "?",
                         DurationFormat.format(ms: f.maxAgeSeconds?.ms), f.cutoff.map { dateTimeText($0.ms) } ?? "-"])
        }
        if let p = r.pcap {
            let kept = "\(DurationFormat.format(ms: p.maxAgeSeconds?.ms)), \(SizeFormat.format(bytes: p.maxBytes))"
            rows.append(["pcap files", String(p.files), bytesText(UInt64(max(0, p.bytes))), kept, "-"])
        }
        var lines: [String] = []
        if r.dryRun {
            lines.append("dry run: would remove \(r.rows) rows and \(r.pcap?.files ?? 0) pcap files; nothing was changed")
        } else {
            lines.append("removed \(r.rows) rows and \(r.pcap?.files ?? 0) pcap files; the store file gave back \(bytesText(UInt64(max(0, r.bytesReclaimed))))")
        }
        lines += table(rows).split(separator: "\n").map(String.init)
        if let sh = r.shared {
            lines.append("shared store (\(sh.backend)): removed \(sh.rows) rows of every gateway (flows \(sh.flows), sessions \(sh.sessions), "
                + "refusals \(sh.refusals), markers \(sh.markers))")
        }
        return lines.joined(separator: "\n")
    }

    /// A one-line progress display on stderr, shown once a prune has run for a second.
    final class TerminalProgress {
        let started = Date()
        var lastDraw = Date.distantPast
        var shown = false

        func update(_ p: PruneProgress) {
            let now = Date()
            guard now.timeIntervalSince(started) >= 1, now.timeIntervalSince(lastDraw) >= 0.1 || p.removed >= p.total else { return }
            lastDraw = now
            shown = true
            let pct = p.total > 0 ? p.removed * 100 / p.total : 100
            Sys.writeText(2, "\r\u{1B}[Kpruning \(p.family.rawValue): \(p.removed) of \(p.total) rows (\(pct)%)")
        }

        func finish() {
            if shown { Sys.writeText(2, "\r\u{1B}[K") }
        }
    }
}
