import Config
import Core
import Foundation
import Sessions
import Store
import Testing

@testable import tunnelctl

/// `session`, `explain PEER` and `peers` (daemon down) take a peer's phase from the rules tunneld
/// applies (`Sessions.WatchdogRules`): at every instant around both boundaries of a window, the
/// CLI's answer is the rules' answer.
@Suite struct SessionRulesAgreementTests {
    @Test func cliPhaseIsTheRulesPhaseAtEveryBoundary() throws {
        let f = try SessionCommandTests.Fixture()
        defer { f.remove() }
        let config = try TunnelConfig.load(path: f.config, readingPrivateKey: false)
        let store = try StateStore(path: f.store, mode: .readOnly)
        let base = SessionCommandTests.now
        var offsets: [Int64] = []
        for peer in ["alice", "carol"] {
            let w = try #require(try store.window(peer: peer))
            for edge in [w.allowedUntil, w.reconnectAt] { offsets += [-1001, -1000, -999, -1, 0, 1, 999, 1000, 1001].map { edge + $0 - base } }
        }
        for offset in offsets {
            let now = base + offset
            for peer in config.peers {
                let tier = try Tunnelctl.tier(of: peer, store)
                let phase = WatchdogRules.phase(now: now, tier: tier, window: try store.window(peer: peer.name)?.dates)
                let r = try Tunnelctl.sessionReport(peer, config: config, source: try WindowSource(local: store), live: nil, now: now)
                switch phase {
                case .paused(let w):
                    #expect(r.state == "paused", "\(peer.name) at \(offset)")
                    #expect(r.secondsToReconnect == WatchdogRules.secondsLeft(now: now, until: w.reconnectAt))
                    #expect(r.secondsLeft == nil)
                case .inWindow(let w):
                    #expect(r.state == "disconnected", "\(peer.name) at \(offset)")
                    #expect(r.secondsLeft == WatchdogRules.secondsLeft(now: now, until: w.allowedUntil))
                case .unlimited, .noWindow, .pauseOver:
                    #expect(r.state == "disconnected" && r.secondsLeft == nil && r.secondsToReconnect == nil, "\(peer.name) at \(offset)")
                }
            }
        }
    }
}
