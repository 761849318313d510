import Core
import Testing

/// `DaemonEvent`: every event's name, priority and fields (the journal's and the stderr line's),
/// each event type once.
@Suite struct DaemonEventTests {
    static let all: [DaemonEvent] = [
        .sessionStart(peer: "alice", tier: .free),
        .sessionEnd(peer: "alice", tier: .premium, reason: .adminKick),
        // A window of a [Tier] class ended by its quota says so (not free / free-limit).
        .windowEnd(peer: "alice", tier: PeerTier(rawValue: "trial")!, reason: .quota, reconnectAtMs: 1_700_000_000_000),
        .refusal(peer: "alice", tier: .free, reason: "free-pause"),
        .tierChange(peer: "alice", from: .free, to: .premium),
        .peerAdd(peer: "bob", tier: .free),
        .peerRemove(peer: "bob"),
        .peerDisable(peer: "bob", reason: "disabled"),
        .policyReload(generation: 3, rules: 12, error: nil, rule: nil),
        .storeOutage(path: "/var/lib/tunnelvision/state.db", error: "database is locked"),
        .storeRecovered(path: "/var/lib/tunnelvision/state.db", dropped: 2),
    ]

    @Test func everyEventTypeHasItsNameAndFields() {
        #expect(Self.all.map(\.name) == DaemonEvent.names)
        let lines = Self.all.map(\.line)
        #expect(lines == [
            "peer alice: session started (free) TUNNELVISION_EVENT=session-start PEER=alice TIER=free",
            "peer alice: session ended (admin-kick) TUNNELVISION_EVENT=session-end PEER=alice TIER=premium REASON=admin-kick",
            "peer alice: trial window ended (quota); refused until 2023-11-14T22:13:20.000Z TUNNELVISION_EVENT=window-end PEER=alice TIER=trial REASON=quota RECONNECT_AT=2023-11-14T22:13:20.000Z",
            "peer alice: handshake refused (free-pause); further refusals are counted, not logged TUNNELVISION_EVENT=refusal PEER=alice TIER=free REASON=free-pause",
            "peer alice: tier free -> premium TUNNELVISION_EVENT=tier-change PEER=alice TIER=premium PREVIOUS_TIER=free",
            "peer bob: added (free) TUNNELVISION_EVENT=peer-add PEER=bob TIER=free",
            "peer bob: removed TUNNELVISION_EVENT=peer-remove PEER=bob REASON=removed",
            "peer bob: disabled; its handshakes are refused TUNNELVISION_EVENT=peer-disable PEER=bob REASON=disabled",
            "policy: reloaded, generation 3 (12 rules) TUNNELVISION_EVENT=policy-reload REASON=reloaded POLICY_GENERATION=3 POLICY_RULES=12",
            #"store /var/lib/tunnelvision/state.db: cannot write (database is locked); history records wait and are counted if dropped TUNNELVISION_EVENT=store-outage REASON="database is locked" STORE=/var/lib/tunnelvision/state.db"#,
            "store /var/lib/tunnelvision/state.db: writable again; 2 record(s) lost meanwhile TUNNELVISION_EVENT=store-recovered REASON=recovered STORE=/var/lib/tunnelvision/state.db DROPPED=2",
        ])
    }

    @Test func aRefusedReloadNamesTheRuleAndIsAnError() {
        let e = DaemonEvent.policyReload(generation: 3, rules: 12, error: "unknown keyword 'blok'", rule: "10-x.rules:4:1")
        #expect(e.priority == 3)
        #expect(e.fields.map(\.key) == ["TUNNELVISION_EVENT", "REASON", "RULE", "POLICY_GENERATION", "POLICY_RULES"])
        #expect(e.fields.first { $0.key == "RULE" }?.value == "10-x.rules:4:1")
        #expect(e.line.contains(#"RULE=10-x.rules:4:1"#))
    }

    @Test func fieldValuesWithSpacesOrQuotesAreQuoted() {
        let e = DaemonEvent.storeOutage(path: "/x", error: #"say "no" \ now"#)
        #expect(e.line.hasSuffix(#"REASON="say \"no\" \\ now" STORE=/x"#))
    }
}
