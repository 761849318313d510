import Core
import Foundation
@testable import Store
import Testing

@testable import tunnelctl

/// `retention show|set` and `prune` with a shared store (issue 19, schema v5): retention is the
/// shared store's row, every gateway's; capture stays this gateway's; `set` writes the shared row
/// and the local copy or nothing; an unreadable shared store is an error (`show` names `--local`).
/// The shared store is `Store = sqlite:…` (the store suite checks the row on both backends).
@Suite struct SharedRetentionCommandTests {
    /// Two gateways' configs (gw-a, gw-b; each its own state directory) naming one shared file.
    func gateways() throws -> (a: HistoryFixture, b: HistoryFixture, shared: String) {
        let a = try HistoryFixture(), b = try HistoryFixture()
        let shared = a.dir + "/shared.db"
        _ = try SQLiteSharedState(path: shared)  // a gateway created it
        try "\nStore = sqlite:\(shared)\nGatewayName = gw-a\n".appendLine(toFile: a.config)
        try "\nStore = sqlite:\(shared)\nGatewayName = gw-b\n".appendLine(toFile: b.config)
        return (a, b, shared)
    }

    func value(_ out: String, _ key: String) -> String? {
        for line in out.split(separator: "\n") {
            let cols = line.split(separator: " ", omittingEmptySubsequences: true)
            if cols.first.map(String.init) == key { return cols.dropFirst().joined(separator: " ") }
        }
        return nil
    }

    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test func setOnOneGatewayIsWhatAnotherShows() throws {
        let (a, b, shared) = try gateways()
        // Nothing shared yet: each gateway's own row, and it says so.
        let none = b.run(["retention", "show"])
        #expect(none.code == .ok && none.out.contains("the shared store sqlite:\(shared) holds none yet"), "\(none.out) \(none.err)")
        let set = a.run(["retention", "set", "flows=3d", "pcap-age=2d"])
        #expect(set.code == .ok && set.err.isEmpty, "\(set.err)")
        #expect(set.out.contains("flows: 7d -> 3d") && set.out.contains("pcap-age: 7d -> 2d"))
        #expect(set.out.contains("stored: retention in the shared store sqlite:DIR/shared.db for every gateway"), "\(set.out)")
        // gw-b (another state.db, never written) reports gw-a's values, and where they came from.
        let show = b.run(["retention", "show"])
        #expect(show.code == .ok, "\(show.err)")
        #expect(value(show.out, "flows") == "3d" && value(show.out, "pcap-age") == "2d" && value(show.out, "refusals") == "30d")
        #expect(show.out.contains("retention: the shared store sqlite:\(shared), every gateway's (set on gw-a at 2026-03-01 12:00:00 UTC)"), "\(show.out)")
        #expect(show.out.contains("capture: this gateway's state.db (not shared)"))
        let j = try json(b.run(["retention", "show", "--json"]).out)
        #expect(j["retentionFrom"] as? String == "shared" && j["sharedBy"] as? String == "gw-a")
        #expect(j["sharedStore"] as? String == "sqlite:\(shared)" && j["sharedAt"] as? String == "2026-03-01T12:00:00.000Z")
        // gw-a keeps a copy in its own state.db; gw-b's --local is its own (tunneld copies it there).
        #expect(try Settings.decode(try a.store().settingsText()).settings.retention.flowsMaxAgeMs == 3 * 86_400_000)
        let local = b.run(["retention", "show", "--local"])
        #expect(local.code == .ok && value(local.out, "flows") == "7d (factory default)" && local.out.contains("--local: the shared store"), "\(local.out)")
        #expect(try json(b.run(["retention", "show", "--local", "--json"]).out)["retentionFrom"] as? String == "local-copy")
        // The row holds the retention section only, stored by gw-a.
        let row = try #require(try SQLiteSharedState(path: shared).settings())
        #expect(row.gateway == "gw-a" && !row.text.contains("capture") && row.text.contains(#""flows":"3d""#))
        // gw-b changes one key: the others stay gw-a's (the shared row is its base).
        let setB = b.run(["retention", "set", "sessions=10d"])
        #expect(setB.code == .ok && setB.out.contains("sessions: 90d -> 10d"), "\(setB.out)")
        let showA = a.run(["retention", "show"])
        #expect(value(showA.out, "flows") == "3d" && value(showA.out, "sessions") == "10d" && showA.out.contains("set on gw-b"))
    }

    @Test func captureStaysThisGatewaysOwn() throws {
        let (a, b, shared) = try gateways()
        let on = a.run(["retention", "set", "capture=on", "capture-detail=full"])
        #expect(on.code == .ok && on.out.contains("stored in this gateway's state.db only (capture is not shared)"), "\(on.out)")
        #expect(try SQLiteSharedState(path: shared).settings() == nil, "a capture change does not touch the shared store")
        #expect(value(a.run(["retention", "show"]).out, "capture") == "on")
        #expect(value(b.run(["retention", "show"]).out, "capture") == "off (factory default)")
        // Mixed: the retention key shared, capture local, and both said.
        let mixed = a.run(["retention", "set", "flows=1d", "capture=off"])
        #expect(mixed.code == .ok && mixed.out.contains("; capture in this gateway's state.db only (not shared)"), "\(mixed.out)")
        #expect(value(b.run(["retention", "show"]).out, "flows") == "1d")
        #expect(value(a.run(["retention", "show"]).out, "capture") == "off")
        // A capture change with the shared store away still works: it is this gateway's.
        try FileManager.default.removeItem(atPath: shared)
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: false)
        #expect(a.run(["retention", "set", "capture=on"]).code == .ok)
    }

    /// The shared store unreachable: `set` of a retention key writes nothing anywhere (exit 1,
    /// the problem and what to do); `show` says it cannot know and names `--local`, which works.
    @Test func anUnreachableSharedStoreIsNeverAnsweredLocally() throws {
        let f = try HistoryFixture()
        try f.store().putSettings(Settings.factory, at: HistoryFixture.now)
        try "\nStore = postgresql://tunnelvision@/tunnelvision?host=\(f.dir)/no-such-socket-dir&connect_timeout=2\n".appendLine(toFile: f.config)
        let before = try HistoryFixture.checksum(try f.store())
        let set = f.run(["retention", "set", "flows=1d"])
        #expect(set.code == .failure && set.out.isEmpty, "\(set.out)")
        #expect(set.err.contains("cannot reach the shared store postgresql://tunnelvision@/tunnelvision") && set.err.contains("nothing was written")
            && set.err.contains("try again once the database answers"), "\(set.err)")
        #expect(try HistoryFixture.checksum(try f.store()) == before, "not even this gateway's copy")
        let show = f.run(["retention", "show"])
        #expect(show.code == .failure && show.out.isEmpty)
        #expect(show.err.contains("cannot read the shared store") && show.err.contains("add --local"), "\(show.err)")
        let local = f.run(["retention", "show", "--local"])
        #expect(local.code == .ok && value(local.out, "flows") == "7d" && local.out.contains("retention: this gateway's state.db"), "\(local.out)")
        // A shared file no gateway created: the same.
        let g = try HistoryFixture()
        try "\nStore = sqlite:\(g.dir)/never-created.db\n".appendLine(toFile: g.config)
        #expect(g.run(["retention", "show"]).err.contains("cannot read the shared store sqlite:DIR/never-created.db"))
    }

    /// A shared row that is not JSON: `show` is an error with the raw text; `set` replaces it.
    @Test func aBrokenSharedRowIsShownRaw() throws {
        let (a, b, shared) = try gateways()
        try SQLiteSharedState(path: shared).setSettings(text: "flows=3d oops", gateway: "gw-b", at: HistoryFixture.now)
        let show = a.run(["retention", "show"])
        #expect(show.code == .failure && show.err.contains("is not a JSON object") && show.err.contains("flows=3d oops"), "\(show.err)")
        let j = a.run(["retention", "show", "--json"])
        #expect(try j.code == .failure && json(j.out)["raw"] as? String == "flows=3d oops")
        let p = a.run(["prune"])
        #expect(p.code == .failure && p.err.contains("nothing was pruned"), "\(p.err)")
        let set = a.run(["retention", "set", "flows=2d"])
        #expect(set.code == .ok && set.out.contains("the shared settings row was not JSON; it was replaced"), "\(set.out)")
        #expect(value(b.run(["retention", "show"]).out, "flows") == "2d")
    }

    /// `prune` prunes with the shared retention, the local store and the shared history alike.
    @Test func pruneUsesTheSharedRetention() throws {
        let (a, _, shared) = try gateways()
        let f = a
        try f.buildHistory()
        let local = try f.store()
        try local.putSettingsText(#"{"retention":{"flows":"forever","refusals":"forever"}}"#, at: HistoryFixture.now)
        let state = try SQLiteSharedState(path: shared)
        try state.ship(HistoryBatch(gateway: "gw-a", flows: try local.flows()))
        let flows = try local.flows().count
        var s = Settings.factory
        try s.set("flows", "1h")
        try state.setSettings(text: s.sharedJSON, gateway: "gw-b", at: HistoryFixture.now)
        let r = f.run(["prune"])
        #expect(r.code == .ok, "\(r.err)")
        #expect(try local.flows().count == flows - 1, "the shared 1h, not the local forever")
        #expect(try state.historyCounts(gateway: nil).flows == Int64(flows - 1))
    }
}
