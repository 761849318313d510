import Core
import Capture
import Config
import ControlProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Runtime

/// `tunnelctl capture on [--detail metadata|full] | off | list | extract --flow ID -o FILE [--filter BPF]`
/// (docs/capture.md).
extension Tunnelctl {
    static let runCaptureOn: Command.Body = { opts, console in
        try captureOnOff(opts, enabled: true, detail: opts[.detail], console)
    }

    static let runCaptureOff: Command.Body = { opts, console in
        try captureOnOff(opts, enabled: false, detail: nil, console)
    }

    static func captureOnOff(_ opts: ParsedOptions, enabled: Bool, detail: String?, _ console: Console) throws -> ExitCode {
        let config = try cliConfig(opts)
        try opts.finish()
        let (enabled, d) = try storeCaptureSettings(config, enabled: enabled, detail: detail)
        return captureApply(config, enabled: enabled, detail: d, console: console)
    }

    static let runCaptureList: Command.Body = { opts, console in
        let config = try cliConfig(opts)
        try opts.finish()
        return try captureList(directory: captureDirectory(config), json: opts[.json], console: console)
    }

    /// --flow and -o are required by the table: the option check has refused a line without them.
    static let runCaptureExtract: Command.Body = { opts, console in
        let config = try cliConfig(opts)
        try opts.finish()
        return try captureExtract(flow: opts[.flow]!, output: opts[.output]!, filter: opts[.filter], directory: captureDirectory(config),
                                  storePath: config.interface.storePath, console: console)
    }

    static func captureDirectory(_ config: TunnelConfig) -> String { config.interface.stateDirectory + "/capture" }

    /// `capture on|off` after the settings row is written: a running daemon is asked to apply it
    /// now and answers once its data path runs with it; without a daemon (or with one too old
    /// for the request) the row alone does it — the daemon reads it at start, or polls it.
    static func captureApply(_ config: TunnelConfig, enabled: Bool, detail: String, console: Console) -> ExitCode {
        let saved = enabled
            ? "capture on, detail \(detail): tunneld starts writing \(captureDirectory(config))/capture-NNNNNN.pcap within a few seconds"
            : "capture off: tunneld closes its capture file within a few seconds"
        let reply: ControlResponse
        do {
            reply = try ControlClient(socketPath: config.interface.controlSocketPath).send(.capture(enabled: enabled, detail: detail))
        } catch {
            if case .daemonNotRunning = error {
                console.print(saved)
                return .ok
            }
            console.print(saved)
            console.error("tunnelctl: the setting is saved, but tunneld did not confirm it: \(error)")
            return .failure
        }
        switch reply {
        case .capture(let r):
            console.print(r.enabled
                ? "capture on, detail \(r.detail): tunneld is capturing to \(r.directory)/capture-NNNNNN.pcap"
                : "capture off: tunneld has stopped capturing")
            return .ok
        case .error(let e) where e.code == .unknownRequest:  // an older tunneld: it polls the row
            console.print(saved)
            return .ok
        case .error(let e):
            console.print(saved)
            console.error("tunnelctl: the setting is saved, but tunneld did not apply it: \(e.message)")
            return .failure
        default:
            console.print(saved)
            console.error("tunnelctl: \(unexpected(reply).message)")
            return .failure
        }
    }

    /// `capture list`: every capture file with its sequence, size, first/last packet time and count.
    static func captureList(directory: String, json: Bool, console: Console) throws -> ExitCode {
        let files: [CaptureFileInfo]
        do {
            files = try CaptureFiles.list(directory: directory, scan: true)
        } catch {
            if case .system(let e) = error, e.errno == ENOENT {
                files = []
            } else if case .system(let s) = error { let e = s.errno
                throw CLIError.failure("\(error)\(accessHint(e, directory))")
            } else {
                throw CLIError.failure("\(error)")
            }
        }
        if json {
            console.print(try encodeJSON(files.map(CaptureFileJSON.init)))
            return .ok
        }
        if files.isEmpty {
            console.print("no capture files in \(directory) (tunnelctl capture on starts a capture)")
            return .ok
        }
        var rows = [["SEQ", "SIZE", "FIRST", "LAST", "PACKETS", "FILE"]]
        for f in files {
            rows.append(["\(f.sequence)", bytesText(UInt64(f.size)),
                         f.firstPacketNanoseconds.map { String(timeText($0).prefix(23)) } ?? "-",
                         f.lastPacketNanoseconds.map { String(timeText($0).prefix(23)) } ?? "-",
                         f.packetCount.map(String.init) ?? "?", PathText.lastComponent(of: f.path)])
        }
        console.print(table(rows))
        return .ok
    }

    /// `capture extract`: the flow's 5-tuple and first location from the store's flow row, or
    /// from the capture's flow index; then its packets (both directions) into `output`.
    static func captureExtract(flow id: UInt64, output: String, filter: String?, directory: String, storePath: String,
                               console: Console) throws -> ExitCode {
        // As `import -o`: an existing file may be another flow's extract or anything else.
        if Sys.exists(output) { throw CLIError.failure("\(output) exists; remove it first or pick another -o FILE (nothing written)") }
        var key: CaptureFlowKey? = nil
        var from: CaptureLocation? = nil
        var until: UInt64? = nil
        if let row = try storedFlow(storePath: storePath, id: Int64(bitPattern: id)), let cap = row.capture {
            key = CaptureFlowKey(proto: row.proto, originator: row.src, originatorPort: row.srcPort,
                                 responder: row.dst, responderPort: row.dstPort)
            from = CaptureLocation(fileSequence: UInt32(truncatingIfNeeded: cap.file), offset: UInt64(cap.offset))
            if row.closed { until = UInt64(max(0, row.lastSeenMs + 1)) * 1_000_000 }
        } else {
            do {
                if let e = try CaptureFlowIndex.find(flowID: id, directory: directory) {
                    key = e.key
                    from = e.location
                }
            } catch {
                if case .system(let s) = error { throw CLIError.failure("\(error)\(accessHint(s.errno, directory))") }
                throw CLIError.failure("\(error)")
            }
        }
        guard let key, let from else {
            throw CLIError.failure("flow \(id) has no captured packets in \(directory) (was capture on? tunnelctl capture list shows the files)")
        }
        do {
            let files = try CaptureFiles.list(directory: directory).filter { $0.sequence >= from.fileSequence }
            guard !files.isEmpty else {
                throw CLIError.failure("capture file \(from.fileSequence) of flow \(id) is gone (pruned by retention?)")
            }
            let result = try CaptureReader.extract(files: files, selection: .flow(key, from: from, until: until),
                                                   bpfFilter: filter, outputPath: output)
            console.print("wrote \(result.packets) packet(s) of flow \(id) to \(output) (read \(result.filesRead) capture file(s))")
            return .ok
        } catch let e as CLIError {
            throw e
        } catch let e as CaptureError {
            // The file did not exist before: what a failed extract left of it is no answer.
            try? Sys.unlinkIfPresent(output)
            if case .badFilter = e { throw CLIError.usage("\(e)") }
            throw CLIError.failure("\(e)")
        }
    }
}
