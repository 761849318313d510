import Core
import Engine
import Foundation
import Policy
import Runtime
import Testing
import TestSupport
import WireGuard

@testable import Daemon

/// The control server's replies built from a running engine (`GatewayEngine+Control`).
@Suite struct EngineControlTests {
    /// A reload (or start) that leaves nothing to enforce is accepted with a warning, in the
    /// reply and in the daemon's log.
    @Test func emptyPolicyDirectoryLoadsWithAWarningInTheLog() throws {
        let dir = NSTemporaryDirectory() + "tv-empty-policy-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let warning = "no *.rules files; every flow gets the built-in default (allow outbound, block inbound)"
        guard case .success(let loaded) = ActivePolicy.load(directory: dir, gateway: []) else { Issue.record("load failed"); return }
        #expect(loaded.0.warnings.map(\.description) == ["\(dir): warning: \(warning)"])

        let log = LogCapture()
        let set = PolicyParser.parse("default allow\n")
        let engine = GatewayEngine(device: try #require(WireGuardDevice(privateKey: [UInt8](repeating: 5, count: 32))),
                                   tun: ChannelTun(), bind: ChannelNetwork().bind(address: IPAddress(v4: 0xC000_0209)),
                                   clock: SystemClock(), policy: (set, CompiledPolicy(set)), log: log.logger)
        let reply = engine.reloadPolicy(directory: dir)
        #expect(reply.succeeded && reply.policy.ruleCount == 0)
        #expect(reply.warnings.map(\.description) == ["\(dir): \(warning)"])
        #expect(log.all.contains("<4>policy: \(dir): warning: \(warning)"), "\(log.all)")
    }
}
