import Core
import ControlProtocol
import Foundation
import Testing

@testable import tunnelctl

/// Golden text for `tunnelctl status`, from fixed replies: a daemon that reports offloads and one
/// from before offloads existed (no `offload` field in its JSON).
@Suite struct StatusRenderTests {
    static func reply(offload: OffloadStatus?, store: StoreHealth? = nil, statusPage: StatusPageCounters? = nil) -> StatusReply {
        StatusReply(
            pid: 4242, startedAtMs: 1_764_400_000_000, uptimeSeconds: 3_725, version: "0.1.0", interface: "tv0",
            listenPort: 51820, addresses: ["10.99.0.1/24", "fd99::1/64"], peersConfigured: 3, peersConnected: 2,
            flowsActive: 17, drops: ["policy-block": 12, "spoofed-source": 3, "tun-truncated": 1], storeQueueDrops: store?.drops.total ?? 0,
            policy: PolicySummary(generation: 4, files: ["00-base.rules", "10-free.rules"], ruleCount: 9,
                                  loadedAtMs: 1_764_400_100_000),
            offload: offload, store: store, statusPage: statusPage)
    }

    /// `StatusListen = 10.99.0.1:80` after a few requests, one from an address of no peer.
    static let statusPage = StatusPageCounters(address: "10.99.0.1", port: 80, requests: 14, refused: 1)

    /// A writer that lost records earlier and is writable now.
    static let storeWithDrops: StoreHealth = {
        var d = StoreDrops()
        d.flows = 736
        d.refusals = 2
        return StoreHealth(drops: d)
    }()

    /// A writer in an outage since 2025-11-29 07:30:00 UTC.
    static let storeInOutage: StoreHealth = {
        var d = StoreDrops()
        d.flows = 12
        return StoreHealth(drops: d, unavailableSinceMs: 1_764_401_400_000, retained: 4096,
                           error: "the store at /var/lib/tunnelvision/state.db stayed locked by another process during BEGIN IMMEDIATE; try again")
    }()

    @Test func statusWithOffloadsGolden() throws {
        let offload = OffloadStatus(tun: "csum tso4 tso6 uso4 uso6", udpSegmentation: true, superPacketsRead: 120,
                                    superPacketsWritten: 3_400, packetsCoalesced: 41_000,
                                    udpCoalescing: true, coalescedReceives: 900, coalescedDatagrams: 23_000)
        try HistoryFixture.expectGolden(Tunnelctl.renderStatus(Self.reply(offload: offload, store: Self.storeWithDrops, statusPage: Self.statusPage)) + "\n", "status-offload.txt")
    }

    /// Issue 13 item 1: an outage in progress and the drops per family are shown, not a bare 0.
    @Test func statusDuringAStoreOutageGolden() throws {
        let utc = Zone.utc
        let text = Tunnelctl.renderStatus(Self.reply(offload: nil, store: Self.storeInOutage), zone: utc)
        #expect(text.contains("store: UNAVAILABLE since 2025-11-29 07:30:00 UTC ("))
        #expect(text.contains("store drops: flows 12\n"))
        #expect(!text.contains("store queue drops"))
        try HistoryFixture.expectGolden(text + "\n", "status-store-outage.txt")
    }

    /// Issue 19: the shared store's line says the backend, its lag, what waits for it and how
    /// deep the history journal is; during an outage, since when and why; lost rows in capitals.
    @Test func statusNamesTheSharedStoreItsLagAndTheJournal() throws {
        let utc = Zone.utc
        var r = Self.reply(offload: nil)
        let now = r.startedAtMs + r.uptimeSeconds * 1000
        r.shared = SharedStoreHealth(backend: "postgresql", gateway: "gw-fra-1", lastSyncAtMs: now - 400, unavailableSinceMs: nil,
                                     error: nil, pending: 0, localOpens: 0, sharedOpens: 12, journalDepth: 3, journalShipped: 9_000)
        var text = Tunnelctl.renderStatus(r, zone: utc)
        #expect(text.contains("shared store: postgresql, gateway gw-fra-1, last sync 400ms ago, 0 change(s) pending; "
            + "12 window(s) opened through it, 0 here alone; history journal 3 change(s) deep, 9000 row(s) shipped\n"), "\(text)")
        r.shared = SharedStoreHealth(backend: "postgresql", gateway: "gw-fra-1", lastSyncAtMs: now - 30_000, unavailableSinceMs: now - 29_000,
                                     error: "connection refused", pending: 2, localOpens: 1, sharedOpens: 12, journalDepth: 5_000,
                                     journalShipped: 9_000, journalMissing: 7)
        text = Tunnelctl.renderStatus(r, zone: utc)
        #expect(text.contains("shared store: postgresql UNAVAILABLE since "), "\(text)")
        #expect(text.contains("(connection refused); gateway gw-fra-1 enforces from memory; 2 change(s) kept for it; "
            + "12 window(s) opened through it, 1 here alone; history journal 5000 change(s) deep, 9000 row(s) shipped, "
            + "7 LOST (pruned before they shipped)"), "\(text)")
        // Where the retention comes from: the shared row (who set it, when), the last one read
        // while the store is away, or this gateway's own while the store holds none.
        r.shared?.retentionFrom = "last-shared"
        r.shared?.retentionSetBy = "gw-b"
        r.shared?.retentionSetAtMs = 1_764_400_000_000
        text = Tunnelctl.renderStatus(r, zone: utc)
        #expect(text.contains("7 LOST (pruned before they shipped); retention: the last shared one read (set on gw-b at 2025-11-29 07:06:40 UTC), "
            + "kept while the store does not answer\n"), "\(text)")
        r.shared?.retentionFrom = "shared"
        #expect(Tunnelctl.renderStatus(r, zone: utc).contains("; retention: the shared store's (set on gw-b at 2025-11-29 07:06:40 UTC)\n"))
        r.shared?.retentionFrom = "local"
        r.shared?.retentionSetBy = nil
        r.shared?.retentionSetAtMs = nil
        #expect(Tunnelctl.renderStatus(r, zone: utc).contains("; retention: this gateway's (the shared store holds none yet)\n"))
    }

    @Test func statusFromAnOlderDaemonGolden() throws {
        // The JSON an older daemon sent has no "offload" key: it decodes, and the line is left out.
        let data = try JSONEncoder().encode(Self.reply(offload: nil))
        #expect(!String(decoding: data, as: UTF8.self).contains("offload"))
        let decoded = try JSONDecoder().decode(StatusReply.self, from: data)
        try HistoryFixture.expectGolden(Tunnelctl.renderStatus(decoded) + "\n", "status-plain.txt")
    }
}
