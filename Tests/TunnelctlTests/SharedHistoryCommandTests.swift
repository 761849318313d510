import Core
import Foundation
@testable import Store
import Testing

@testable import tunnelctl

/// `flows`, `refusals` and `timeline` with a shared store (issue 19): every gateway's rows with a
/// GATEWAY column, `--gateway`, `--local`, and an unreadable shared store as an error that names
/// `--local` — never an empty answer. The shared store here is `Store = sqlite:…` (the same
/// `HistoryReading` contract as PostgreSQL, which the store suite checks on both backends).
@Suite struct SharedHistoryCommandTests {
    /// The fixture's history shipped as gw-a's, plus two rows of gw-b; config names the shared file.
    func fixture() throws -> HistoryFixture {
        let f = try HistoryFixture()
        try f.buildHistory()
        let local = try f.store()
        let shared = try SQLiteSharedState(path: f.dir + "/shared.db")
        try shared.ship(HistoryBatch(gateway: "gw-a", flows: try local.flows(), sessions: try local.sessions(),
                                     refusals: try local.refusals(), markers: try local.markers()))
        let n = HistoryFixture.now, m = HistoryFixture.minute
        try shared.ship(HistoryBatch(
            gateway: "gw-b",
            flows: [Flow(id: 1, proto: 6, src: HistoryFixture.alice, srcPort: 41000, dst: HistoryFixture.printer, dstPort: 631,
                         peer: "alice", host: "printer.lan", firstSeen: n - 5 * m, lastSeen: n - 4 * m,
                         counters: FlowCounters(bytesOut: 100, bytesIn: 200, packetsOut: 1, packetsIn: 2), verdict: .allow,
                         rule: "20-lan.rules:4", capture: nil, closedAt: nil, closeReason: nil)],
            refusals: [Refusal(id: 1, kind: .session, peer: "alice", rule: "", flowKey: "", reason: "free-limit pause",
                               window: n - 2 * HistoryFixture.hour - 15 * m, count: 2, firstAt: n - 3 * m, lastAt: n - 2 * m)]))
        try "\nStore = sqlite:\(f.dir)/shared.db\nGatewayName = gw-a\n".appendLine(toFile: f.config)
        return f
    }

    @Test func everyGatewaysRowsWithTheirGateway() throws {
        let f = try fixture()
        let flows = f.run(["flows"])
        #expect(flows.code == .ok && flows.err.isEmpty)
        try HistoryFixture.expectGolden(flows.out, "shared-flows.txt")
        let refusals = f.run(["refusals"])
        try HistoryFixture.expectGolden(refusals.out, "shared-refusals.txt")
        let timeline = f.run(["timeline", "--since", "1d"])
        #expect(timeline.code == .ok)
        try HistoryFixture.expectGolden(timeline.out, "shared-timeline.txt")
        let json = f.run(["flows", "--json"])
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [[String: Any]])
        #expect(rows.compactMap { $0["gateway"] as? String } == ["gw-b", "gw-a", "gw-a", "gw-a"])
        // Audit sessions are this router's: in the shared timeline too (gateway null).
        let tj = try #require(try JSONSerialization.jsonObject(with: Data(f.run(["timeline", "--since", "1d", "--json"]).out.utf8)) as? [String: Any])
        let events = try #require(tj["events"] as? [[String: Any]])
        #expect(events.filter { ($0["event"] as? String)?.hasPrefix("audit-") == true }.allSatisfy { $0["gateway"] is NSNull })
        #expect(events.filter { $0["gateway"] as? String == "gw-b" }.count == 2)
    }

    @Test func oneGatewayOrThisRoutersOwn() throws {
        let f = try fixture()
        let b = f.run(["flows", "--gateway", "gw-b"])
        #expect(b.code == .ok && b.out.contains("gw-b") && !b.out.contains("gw-a") && b.out.contains(":631"))
        #expect(f.run(["refusals", "--gateway", "gw-z"]).out == "no refusals on gw-z\n")
        let tb = f.run(["timeline", "--since", "1d", "--gateway", "gw-b"])
        #expect(!tb.out.contains("audit session"), "another gateway's answer leaves this router's audit sessions out")
        // --local: this router's store, exactly what a router without a shared store shows.
        let local = f.run(["flows", "--local"])
        #expect(local.code == .ok && !local.out.contains("GATEWAY") && !local.out.contains(":631"))
        #expect(local.out.split(separator: "\n").count == 5, "header, the three local flows and the note on the open one's counts")
        let both = f.run(["flows", "--local", "--gateway", "gw-b"])
        #expect(both.code == .failure && both.err.contains("give one of them"))
    }

    @Test func gatewayNeedsASharedStore() throws {
        let f = try HistoryFixture()
        try f.buildHistory()
        let r = f.run(["flows", "--gateway", "gw-b"])
        #expect(r.code == .failure && r.out.isEmpty)
        #expect(r.err.contains("Store = local") && r.err.contains("--gateway reads a shared store"))
    }

    /// `tunnelctl prune` prunes the shared store too, with the local retention's cut-offs; a dry
    /// run never touches it; one that cannot be reached fails after the local prune.
    @Test func pruneReachesTheSharedStore() throws {
        let f = try fixture()
        try f.store().putSettingsText(#"{"retention":{"flows":"1h","refusals":"1h"}}"#, at: HistoryFixture.now)
        let shared = try SQLiteSharedState(path: f.dir + "/shared.db")
        let before = try shared.historyCounts(gateway: nil)
        let dry = f.run(["prune", "--dry-run", "--json"])
        #expect(try dry.code == .ok && dry.out.contains(#""shared" : null"#) && shared.historyCounts(gateway: nil) == before)
        let r = f.run(["prune"])
        #expect(r.code == .ok, "\(r.err)")
        // gw-a's flow 1 (last seen 08:50) is older than 1 h; its refusal (last 11:00, the cut-off
        // itself) and gw-b's rows are not.
        #expect(r.out.contains("shared store (sqlite): removed 1 rows of every gateway (flows 1, sessions 0, refusals 0, markers 0)"), "\(r.out)")
        #expect(try shared.historyCounts(gateway: nil) == HistoryCounts(flows: before.flows - 1, sessions: before.sessions,
                                                                          refusals: before.refusals, markers: before.markers))
        let again = f.run(["prune", "--json"])
        #expect(again.code == .ok)
        try HistoryFixture.expectGolden(again.out, "prune-shared.json")
        try FileManager.default.removeItem(atPath: f.dir + "/shared.db")
        try FileManager.default.createDirectory(atPath: f.dir + "/shared.db", withIntermediateDirectories: false)
        let broken = f.run(["prune"])
        #expect(broken.code == .failure && broken.out.contains("removed 0 rows") && broken.err.contains("the local store was pruned, the shared store sqlite:DIR/shared.db was not"), "\(broken.err)")
    }

    /// Disabled / Expires changed on another gateway: `explain`, `peer list|show` answer with the
    /// shared change; `peer enable` here writes it back for every gateway even though this
    /// config already admits the peer.
    @Test func aDisableMadeOnAnotherGatewayIsTheAnswerHere() throws {
        let f = try HistoryFixture()
        try "\nStore = sqlite:\(f.dir)/shared.db\nGatewayName = gw-a\n\n[Peer]\nName = alice\nPublicKey = AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=\nAllowedIPs = 10.99.0.2/32\n"
            .appendLine(toFile: f.config)
        let shared = try SQLiteSharedState(path: f.dir + "/shared.db")
        #expect(f.run(["explain", "alice"]).code == .failure, "not refused: nothing shared yet, the config admits her")
        try shared.setAdmission(SharedAdmission(peer: "alice", disabled: true, expiresAt: nil, changedAt: HistoryFixture.now - 60_000, gateway: "gw-b"))
        let e = f.run(["explain", "alice"])
        #expect(e.code == .ok && e.out == "alice: refused — disabled on gw-b at 2026-03-01 11:59:00 UTC, shared by every gateway (tunnelctl peer enable alice)\n", "\(e.out)")
        #expect(f.run(["peer", "list"]).out.contains("disabled"))
        #expect(f.run(["peer", "show", "alice"]).out.contains("state: disabled (set on gw-b at 2026-03-01T11:59:00.000Z, shared store)"))
        let en = f.run(["peer", "enable", "alice"])
        #expect(en.code == .ok && en.out.contains("alice: enabled on every gateway of the shared store sqlite"), "\(en.out) \(en.err)")
        #expect(!(try String(contentsOfFile: f.config, encoding: .utf8)).contains("Disabled"), "the config already admitted her: unchanged")
        let row = try #require(try shared.admissions(changedAfter: 0).changes.first)
        #expect(!row.disabled && row.gateway == "gw-a" && row.changedAt == HistoryFixture.now)
        #expect(f.run(["explain", "alice"]).code == .failure)
        #expect(f.run(["peer", "enable", "alice"]).out == "alice: already enabled (on gw-a, shared store)\n")
        // The shared store unreadable: an error, not the config's "not refused".
        try FileManager.default.removeItem(atPath: f.dir + "/shared.db")
        let down = f.run(["explain", "alice"])
        #expect(down.code == .failure && down.out.isEmpty && down.err.contains("this configuration alone may be out of date"), "\(down.err)")
    }

    /// An unreachable PostgreSQL and a shared file no gateway created: exit 1, nothing on stdout,
    /// the store named and `--local` offered.
    @Test func anUnreadableSharedStoreIsAnErrorNeverAnEmptyList() throws {
        let f = try HistoryFixture()
        try f.buildHistory()
        try "\nStore = postgresql://tunnelvision@/tunnelvision?host=\(f.dir)/no-such-socket-dir&connect_timeout=2\n".appendLine(toFile: f.config)
        for cmd in [["flows"], ["refusals"], ["timeline"]] {
            let r = f.run(cmd)
            #expect(r.code == .failure && r.out.isEmpty, "\(cmd)")
            #expect(r.err.contains("cannot read the shared store postgresql://tunnelvision@/tunnelvision") && r.err.contains("add --local"), "\(r.err)")
            #expect(f.run(cmd + ["--local"]).code == .ok)
        }
        let g = try HistoryFixture()
        try "\nStore = sqlite:\(g.dir)/never-created.db\n".appendLine(toFile: g.config)
        let r = g.run(["flows"])
        #expect(r.code == .failure && r.out.isEmpty && r.err.contains("cannot read the shared store sqlite:DIR/never-created.db"), "\(r.err)")
    }
}

extension String {
    /// Appends this text to the file at `path`.
    func appendLine(toFile path: String) throws {
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? h.close() }
        try h.seekToEnd()
        try h.write(contentsOf: Data(utf8))
    }
}

/// `session` and `explain PEER` with a shared store (issue 19): the window and the tier every
/// gateway enforces, read from the shared store, with the gateway that opened the window; `--local`
/// reads this router's own copy; an unreadable shared store is an error naming `--local`.
@Suite struct SharedWindowCommandTests {
    static let key = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE="

    func fixture() throws -> (HistoryFixture, SQLiteSharedState) {
        let f = try HistoryFixture()
        try "\nStore = sqlite:\(f.dir)/shared.db\nGatewayName = gw-a\n\n[Peer]\nName = alice\nPublicKey = \(Self.key)\nAllowedIPs = 10.99.0.2/32\n"
            .appendLine(toFile: f.config)
        return (f, try SQLiteSharedState(path: f.dir + "/shared.db"))
    }

    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test func theWindowAnotherGatewayOpenedIsTheAnswer() throws {
        let (f, shared) = try fixture()
        let n = HistoryFixture.now, m = HistoryFixture.minute
        // This router's copy is one pass behind: no window yet. gw-b opened one 10 minutes ago.
        try f.store().putWindow(SessionWindow(peer: "alice", dates: WindowDates(allowedUntil: n - 5 * m, reconnectAt: n - m)))
        let dates = WindowDates(allowedUntil: n + 20 * m, reconnectAt: n + 23 * HistoryFixture.hour)
        _ = try shared.openWindow(peer: "alice", dates: dates, gateway: "gw-b", now: n - 10 * m)
        let s = f.run(["session", "alice"])
        #expect(s.code == .ok && s.out.contains("20m00s left") && s.out.hasSuffix(" [window opened on gw-b]\n"), "\(s.out) \(s.err)")
        let j = try json(f.run(["session", "alice", "--json"]).out)
        #expect(j["windowGateway"] as? String == "gw-b" && j["secondsLeft"] as? Int == 1200)
        // --local: this router's store, in which the last window's pause is over.
        let l = f.run(["session", "alice", "--local"])
        #expect(l.code == .ok && !l.out.contains("opened on") && !l.out.contains("left"), "\(l.out)")
        #expect(try json(f.run(["session", "alice", "--local", "--json"]).out)["windowGateway"] is NSNull)
        #expect(f.run(["explain", "alice"]).code == .failure, "in a window: not refused")
        // A premium override made on another gateway applies here too.
        try shared.setTier(peer: "alice", tier: .premium, at: n - m)
        #expect(f.run(["session", "alice"]).out.contains("alice (premium)"))
        #expect(f.run(["session", "alice", "--local"]).out.contains("alice (free)"))
    }

    @Test func aPauseOnAnotherGatewayRefusesHereWithItsAttempts() throws {
        let (f, shared) = try fixture()
        let n = HistoryFixture.now, m = HistoryFixture.minute, h = HistoryFixture.hour
        let dates = WindowDates(allowedUntil: n - 30 * m, reconnectAt: n + 2 * h)
        _ = try shared.openWindow(peer: "alice", dates: dates, gateway: "gw-b", now: n - 90 * m)
        try shared.ship(HistoryBatch(gateway: "gw-b", refusals: [
            Refusal(id: 1, kind: .session, peer: "alice", rule: "", flowKey: "", reason: "free-limit pause",
                    window: dates.allowedUntil, count: 3, firstAt: n - 20 * m, lastAt: n - 10 * m),
            Refusal(id: 2, kind: .session, peer: "alice", rule: "", flowKey: "", reason: "free-limit pause",
                    window: dates.allowedUntil - h, count: 50, firstAt: n - 80 * m, lastAt: n - 70 * m),  // another window's
        ]))
        let e = f.run(["explain", "alice", "--json"])
        #expect(e.code == .ok, "\(e.out) \(e.err)")
        let j = try json(e.out)
        #expect(j["refused"] as? Bool == true && j["attempts"] as? Int == 3 && j["lastAttempt"] as? String == "2026-03-01T11:50:00.000Z", "\(e.out)")
        #expect((j["session"] as? [String: Any])?["windowGateway"] as? String == "gw-b")
        _ = try f.store()  // this router's store exists, its copy of the window not yet
        let local = f.run(["explain", "alice", "--local"])
        #expect(local.code == .failure && local.out.contains("not refused"), "this router's copy has no window yet: \(local.out) \(local.err)")
    }

    @Test func anUnreadableSharedStoreIsAnErrorThatNamesLocal() throws {
        let f = try HistoryFixture()
        try "\nStore = sqlite:\(f.dir)/never-created.db\n\n[Peer]\nName = alice\nPublicKey = \(Self.key)\nAllowedIPs = 10.99.0.2/32\n"
            .appendLine(toFile: f.config)
        _ = try f.store()
        for cmd in [["session"], ["session", "alice"], ["session", "alice", "--json"]] {
            let r = f.run(cmd)
            #expect(r.code == .failure && r.out.isEmpty && r.err.contains("cannot read the shared store sqlite:DIR/never-created.db") && r.err.contains("add --local"), "\(cmd): \(r.err)")
            #expect(f.run(cmd + ["--local"]).code == .ok)
        }
        let e = f.run(["explain", "alice"])
        #expect(e.code == .failure && e.out.isEmpty && e.err.contains("cannot read the shared store"), "never 'not refused': \(e.out) \(e.err)")
    }
}
