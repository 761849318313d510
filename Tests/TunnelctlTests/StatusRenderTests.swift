import Core
import Control
import Foundation
import Testing

@testable import tunnelctl

/// Golden text for `tunnelctl status`, from fixed replies: a daemon that reports offloads and one
/// from before offloads existed (no `offload` field in its JSON).
@Suite struct StatusRenderTests {
    static func reply(offload: OffloadStatus?) -> StatusReply {
        StatusReply(
            pid: 4242, startedAtMs: 1_764_400_000_000, uptimeSeconds: 3_725, version: "0.1.0", interface: "tv0",
            listenPort: 51820, addresses: ["10.99.0.1/24", "fd99::1/64"], peersConfigured: 3, peersConnected: 2,
            flowsActive: 17, drops: ["policy-block": 12, "spoofed-source": 3, "tun-truncated": 1], storeQueueDrops: 0,
            policy: PolicySummary(generation: 4, files: ["00-base.rules", "10-free.rules"], ruleCount: 9,
                                  loadedAtMs: 1_764_400_100_000),
            offload: offload)
    }

    @Test func statusWithOffloadsGolden() throws {
        let offload = OffloadStatus(tun: "csum tso4 tso6 uso4 uso6", udpSegmentation: true, superPacketsRead: 120,
                                    superPacketsWritten: 3_400, packetsCoalesced: 41_000)
        try HistoryFixture.expectGolden(Tunnelctl.renderStatus(Self.reply(offload: offload)) + "\n", "status-offload.txt")
    }

    @Test func statusFromAnOlderDaemonGolden() throws {
        // The JSON an older daemon sent has no "offload" key: it decodes, and the line is left out.
        let data = try JSONEncoder().encode(Self.reply(offload: nil))
        #expect(!String(decoding: data, as: UTF8.self).contains("offload"))
        let decoded = try JSONDecoder().decode(StatusReply.self, from: data)
        try HistoryFixture.expectGolden(Tunnelctl.renderStatus(decoded) + "\n", "status-plain.txt")
    }
}
