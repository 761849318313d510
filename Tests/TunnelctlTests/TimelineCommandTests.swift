import Core
import Foundation
import Store
import Testing

@testable import tunnelctl

/// `tunnelctl timeline`: golden text and JSON on the fixture store, `--since`, `--peer`.
@Suite struct TimelineCommandTests {
    @Test func wholeDayGolden() throws {
        let f = try HistoryFixture()
        try f.buildHistory()
        let text = f.run(["timeline", "--since", "1d"])
        #expect(text.code == .ok && text.err.isEmpty)
        try HistoryFixture.expectGolden(text.out, "timeline-day.txt")
        let json = f.run(["timeline", "--since", "1d", "--json"])
        #expect(json.code == .ok)
        try HistoryFixture.expectGolden(json.out, "timeline-day.json")
    }

    @Test func eventsAreInTimeOrderAndComplete() throws {
        let f = try HistoryFixture()
        try f.buildHistory()
        let r = f.run(["timeline", "--since", "forever", "--json"])
        let root = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        let events = try #require(root["events"] as? [[String: Any]])
        let times = events.compactMap { ($0["at"] as? String).flatMap(TimeText.parseISO) }
        #expect(times.count == events.count && times == times.sorted())
        let kinds = events.compactMap { $0["event"] as? String }
        #expect(Set(kinds) == ["marker", "session-start", "session-end", "flow-open", "flow-close", "flow-block", "refusal",
                                "audit-start", "audit-stop"])
        #expect(kinds.filter { $0 == "marker" }.count == 3)
        #expect(root["since"] is NSNull && root["truncated"] as? Bool == false)
        // Each event carries its row, the others are null.
        for e in events {
            let rows = ["flow", "refusal", "session", "audit", "marker"].filter { !(e[$0] is NSNull) }
            #expect(rows.count == 1, "\(e)")
        }
    }

    @Test func sinceAndPeer() throws {
        let f = try HistoryFixture()
        try f.buildHistory()
        // Default: the last hour.
        let hour = f.run(["timeline"])
        try HistoryFixture.expectGolden(hour.out, "timeline-hour.txt")
        let bob = f.run(["timeline", "--since", "1d", "--peer", "bob"])
        try HistoryFixture.expectGolden(bob.out, "timeline-peer-bob.txt")
        #expect(!bob.out.contains("alice"), "another peer's rows are left out")
        #expect(bob.out.contains("seen the alert"), "markers annotate every peer's timeline")
        let none = f.run(["timeline", "--since", "1m"])
        #expect(none.code == .ok && none.out == "nothing since 2026-03-01 11:59:00 UTC\n")
        #expect(f.run(["timeline", "--since", "soon"]).code == .usage)
        #expect(f.run(["timeline", "extra"]).code == .usage)
    }
}
