import ControlProtocol
import Core
import Daemon
import Packet
import Testing

/// `MetricsText`: the names, types and labels `/metrics` and `tunnelctl metrics` show (a golden
/// list: renaming a metric breaks dashboards and alerts, so it must be deliberate), label
/// escaping, and the text format's shape (promtool checks a real scrape in scripts/e2e/metrics.sh).
@Suite struct MetricsTextTests {
    static func snapshot() -> MetricsSnapshot {
        let status = StatusReply(
            pid: 42, startedAtMs: 1_700_000_000_000, uptimeSeconds: 60, version: "0.1.0", interface: "tv0", listenPort: 51820,
            addresses: ["10.99.0.1/24"], peersConfigured: 2, peersConnected: 1, flowsActive: 3,
            drops: ["policy-block": 7, "wireguard-replay": 1], storeQueueDrops: 2,
            policy: PolicySummary(generation: 4, files: ["10-base.rules"], ruleCount: 1, loadedAtMs: 1_700_000_000_500),
            store: StoreHealth(drops: { var d = StoreDrops(); d.flows = 2; return d }(), unavailableSinceMs: 1_700_000_001_000, retained: 5))
        return MetricsSnapshot(
            status: status,
            peers: [
                .init(name: "alice", tier: .free, rxBytes: 1000, txBytes: 2000, rxPackets: 10, txPackets: 20,
                      lastHandshakeMs: 1_700_000_000_250, session: .connected, remainingMs: 12_500, refusals: 0,
                      limits: PeerLimits(sessionMs: 1_800_000, quotaBytes: 1 << 30, quotaUpBytes: 100 << 20),
                      quotaUsed: ByteUse(up: 12 << 20, down: 300 << 20)),
                .init(name: "bob", tier: .premium, session: .paused, refusals: 3),
            ],
            rules: [
                PolicyRuleStatus(file: "10-base.rules", line: 3, text: "allow tcp", name: "say \"hi\"\\now\n", hits: 9),
                PolicyRuleStatus(file: "(built-in)", line: 0, text: "default out allow", name: nil, hits: 1),
            ],
            flowCapacity: 65_536, flowStats: FlowTableStats(opened: 11, expired: 5, evicted: 2, removed: 1),
            store: .init(queueDepth: 4, failedBatches: 6, outages: 1), handshakes: 8, cookieReplies: 2, handshakeBacklog: 0,
            underLoad: false, reloads: 2, reloadErrors: 1)
    }

    @Test func namesTypesAndLabelsAreTheGoldenList() {
        let text = MetricsText.render(Self.snapshot())
        var families: [String] = []
        for line in text.split(separator: "\n") where line.hasPrefix("# TYPE ") {
            families.append(String(line.dropFirst(7)))
        }
        #expect(families == [
            "tunnelvision_build_info gauge",
            "tunnelvision_start_time_seconds gauge",
            "tunnelvision_peers_configured gauge",
            "tunnelvision_peers_connected gauge",
            "tunnelvision_peer_receive_bytes_total counter",
            "tunnelvision_peer_transmit_bytes_total counter",
            "tunnelvision_peer_receive_packets_total counter",
            "tunnelvision_peer_transmit_packets_total counter",
            "tunnelvision_peer_last_handshake_timestamp_seconds gauge",
            "tunnelvision_peer_session_remaining_seconds gauge",
            "tunnelvision_peer_refusals_total counter",
            "tunnelvision_peer_quota_bytes gauge",
            "tunnelvision_peer_quota_used_bytes gauge",
            "tunnelvision_peer_session_state gauge",
            "tunnelvision_rule_hits_total counter",
            "tunnelvision_policy_generation gauge",
            "tunnelvision_policy_rules gauge",
            "tunnelvision_policy_loaded_timestamp_seconds gauge",
            "tunnelvision_reloads_total counter",
            "tunnelvision_reload_errors_total counter",
            "tunnelvision_drops_total counter",
            "tunnelvision_flows_active gauge",
            "tunnelvision_flow_table_capacity gauge",
            "tunnelvision_flows_opened_total counter",
            "tunnelvision_flows_expired_total counter",
            "tunnelvision_flow_evictions_total counter",
            "tunnelvision_handshakes_total counter",
            "tunnelvision_cookie_replies_total counter",
            "tunnelvision_under_load gauge",
            "tunnelvision_handshake_backlog gauge",
            "tunnelvision_store_queue_depth gauge",
            "tunnelvision_store_retained_records gauge",
            "tunnelvision_store_dropped_records_total counter",
            "tunnelvision_store_failed_batches_total counter",
            "tunnelvision_store_outages_total counter",
            "tunnelvision_store_unavailable gauge",
        ])
        // Every family has HELP then TYPE, and every sample belongs to the family above it.
        var family = ""
        var sawHelp = false
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# HELP ") {
                family = String(line.dropFirst(7).prefix(while: { $0 != " " }))
                sawHelp = true
            } else if line.hasPrefix("# TYPE ") {
                #expect(sawHelp)
                #expect(line.dropFirst(7).hasPrefix(family + " "))
                sawHelp = false
            } else {
                #expect(line.hasPrefix(family + "{") || line.hasPrefix(family + " "), "\(line) outside \(family)")
            }
        }
    }

    @Test func samplesCarryTheirLabelsAndBaseUnits() {
        let text = MetricsText.render(Self.snapshot())
        let lines = Set(text.split(separator: "\n").map(String.init))
        for expected in [
            #"tunnelvision_build_info{version="0.1.0"} 1"#,
            #"tunnelvision_start_time_seconds 1700000000"#,
            #"tunnelvision_peer_receive_bytes_total{peer="alice",tier="free"} 1000"#,
            #"tunnelvision_peer_transmit_packets_total{peer="alice",tier="free"} 20"#,
            #"tunnelvision_peer_last_handshake_timestamp_seconds{peer="alice",tier="free"} 1700000000.25"#,
            #"tunnelvision_peer_last_handshake_timestamp_seconds{peer="bob",tier="premium"} 0"#,
            #"tunnelvision_peer_session_remaining_seconds{peer="alice",tier="free"} 12.5"#,
            #"tunnelvision_peer_refusals_total{peer="bob",tier="premium"} 3"#,
            #"tunnelvision_peer_quota_bytes{peer="alice",tier="free",direction="total"} 1073741824"#,
            #"tunnelvision_peer_quota_bytes{peer="alice",tier="free",direction="up"} 104857600"#,
            #"tunnelvision_peer_quota_used_bytes{peer="alice",tier="free",direction="up"} 12582912"#,
            #"tunnelvision_peer_quota_used_bytes{peer="alice",tier="free",direction="down"} 314572800"#,
            #"tunnelvision_peer_session_state{peer="bob",tier="premium",state="paused"} 1"#,
            #"tunnelvision_peer_session_state{peer="bob",tier="premium",state="connected"} 0"#,
            #"tunnelvision_rule_hits_total{rule="10-base.rules:3",name="say \"hi\"\\now\n"} 9"#,
            #"tunnelvision_rule_hits_total{rule="(built-in):0",name=""} 1"#,
            #"tunnelvision_drops_total{reason="policy-block"} 7"#,
            #"tunnelvision_flow_evictions_total 2"#,
            #"tunnelvision_store_dropped_records_total{family="flows"} 2"#,
            #"tunnelvision_store_dropped_records_total{family="refusals"} 0"#,
            #"tunnelvision_store_queue_depth 4"#,
            #"tunnelvision_store_unavailable 1"#,
            #"tunnelvision_reload_errors_total 1"#,
        ] {
            #expect(lines.contains(expected), "missing: \(expected)")
        }
        // Only the quotas configured, and use only for a peer with a quota.
        #expect(!text.contains(#"tunnelvision_peer_quota_bytes{peer="alice",tier="free",direction="down"}"#))
        #expect(!text.contains(#"tunnelvision_peer_quota_used_bytes{peer="bob""#))
        // Only a connected free peer has seconds left.
        #expect(!text.contains(#"tunnelvision_peer_session_remaining_seconds{peer="bob""#))
        #expect(text.hasSuffix("\n"))
    }

    @Test func escapingOfLabelValues() {
        #expect(MetricsText.escape(#"a"b\c"# + "\nd") == #"a\"b\\c\nd"#)
        #expect(MetricsText.escape("plain-name_1.x") == "plain-name_1.x")
    }
}
