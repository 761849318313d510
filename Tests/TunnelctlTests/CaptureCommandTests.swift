import Core
import ControlProtocol
import Daemon
import Foundation
import Store
import Synchronization
import Testing

@testable import tunnelctl

/// `tunnelctl capture on|off`: the settings row is always written; a running daemon is asked to
/// apply it at once (control request `capture`) and the command returns after its answer.
@Suite(.serialized) struct CaptureCommandTests {
    /// A stand-in daemon on the fixture's control socket answering with `answer`.
    func withDaemon(_ f: HistoryFixture, answer: @escaping @Sendable (ControlRequest) -> ControlResponse,
                    _ body: (borrowing Mutex<[ControlRequest]>) throws -> Void) throws {
        try FileManager.default.createDirectory(atPath: f.dir + "/run", withIntermediateDirectories: true)
        let seen = Mutex<[ControlRequest]>([])
        let server = try ControlServer(path: f.dir + "/run/control.sock") { request, _ in
            seen.withLock { $0.append(request) }
            return answer(request)
        }
        defer { server.stop() }
        try body(seen)
    }

    /// `on full`, `off metadata`, … from the settings row.
    func storedCapture(_ f: HistoryFixture) throws -> String {
        let s = try StateStore(path: f.storePath, mode: .readOnly).settings().settings
        return "\(s.capture.enabled ? "on" : "off") \(s.capture.detail.rawValue)"
    }

    @Test func onAndOffAskTheRunningDaemonAndReportWhatItApplied() throws {
        let f = try HistoryFixture()
        _ = try f.store()
        try withDaemon(f, answer: { request in
            guard case .capture(let enabled, let detail) = request else { return .failure(.failed, "unexpected") }
            return .capture(CaptureReply(enabled: enabled, detail: detail, directory: "/x/capture"))
        }) { (seen: borrowing Mutex<[ControlRequest]>) throws in
            let on = f.run(["capture", "on", "--detail", "full"])
            #expect(on.code == .ok)
            #expect(on.out == "capture on, detail full: tunneld is capturing to /x/capture/capture-NNNNNN.pcap\n")
            #expect(try storedCapture(f) == "on full" as String)
            let off = f.run(["capture", "off"])
            #expect(off.code == .ok && off.out == "capture off: tunneld has stopped capturing\n")
            #expect(try storedCapture(f) == "off full" as String)
            #expect(seen.withLock { $0 } == [.capture(enabled: true, detail: "full"), .capture(enabled: false, detail: "full")])
        }
    }

    @Test func withoutADaemonOrWithAnOlderOneTheRowAloneDoesIt() throws {
        let f = try HistoryFixture()
        _ = try f.store()
        let down = f.run(["capture", "on"])
        #expect(down.code == .ok)
        #expect(down.out == "capture on, detail metadata: tunneld starts writing DIR/state/capture/capture-NNNNNN.pcap within a few seconds\n")
        #expect(try storedCapture(f) == "on metadata" as String)
        try withDaemon(f, answer: { _ in .failure(.unknownRequest, "unknown request 'capture'") }) { (_: borrowing Mutex<[ControlRequest]>) throws in
            let old = f.run(["capture", "off"])
            #expect(old.code == .ok && old.out == "capture off: tunneld closes its capture file within a few seconds\n")
        }
        try withDaemon(f, answer: { _ in .failure(.failed, "capture is unavailable") }) { (_: borrowing Mutex<[ControlRequest]>) throws in
            let failed = f.run(["capture", "on"])
            #expect(failed.code == .failure)
            #expect(failed.err.contains("the setting is saved, but tunneld did not apply it: capture is unavailable"))
            #expect(try storedCapture(f) == "on metadata" as String)
        }
    }
}
