import Core
import Foundation
import Store
import Testing

@testable import tunnelctl

/// `tunnelctl retention show|set`: tolerant decoding seen through the CLI (missing, unknown,
/// wrong type in one field, not JSON, empty row), golden output, and validation of `set`.
@Suite struct RetentionCommandTests {
    func fixture(row: String?) throws -> HistoryFixture {
        let f = try HistoryFixture()
        let s = try f.store()
        if let row { try s.putSettingsText(row, at: HistoryFixture.now) }
        return f
    }

    func value(_ out: String, _ key: String) -> String? {
        for line in out.split(separator: "\n") {
            let cols = line.split(separator: " ", omittingEmptySubsequences: true)
            if cols.first.map(String.init) == key { return cols.dropFirst().joined(separator: " ") }
        }
        return nil
    }

    @Test func factoryWhenThereIsNoRow() throws {
        let f = try fixture(row: nil)
        let r = f.run(["retention", "show"])
        #expect(r.code == .ok && r.err.isEmpty)
        try HistoryFixture.expectGolden(r.out, "retention-show-empty.txt")
        let blank = try fixture(row: "   ")
        let b = blank.run(["retention", "show"])
        #expect(b.code == .ok && b.out == r.out, "a blank row reads like no row")
        let empty = try fixture(row: "")
        #expect(empty.run(["retention", "show"]).out == r.out, "an empty row reads like no row")
        // An empty object is a row: every field defaulted, but no "no settings row" line.
        let object = try fixture(row: "{}")
        let o = object.run(["retention", "show"])
        #expect(o.code == .ok && o.out.components(separatedBy: "(factory default)").count == 9)
        #expect(!o.out.contains("no settings row"))
    }

    @Test func missingFieldsTakeFactoryValuesTheRestAreKept() throws {
        let f = try fixture(row: #"{"retention":{"flows":"3d","pcap-bytes":"500MB"}}"#)
        let r = f.run(["retention", "show"])
        #expect(r.code == .ok)
        #expect(value(r.out, "flows") == "3d")
        #expect(value(r.out, "pcap-bytes") == "500MB")
        #expect(value(r.out, "refusals") == "30d (factory default)")
        #expect(value(r.out, "capture") == "off (factory default)")
        try HistoryFixture.expectGolden(r.out, "retention-show-partial.txt")
        let j = f.run(["retention", "show", "--json"])
        try HistoryFixture.expectGolden(j.out, "retention-show-partial.json")
    }

    @Test func unknownFieldsAreListedAndIgnored() throws {
        let f = try fixture(row: #"{"retention":{"flows":"1d","refusals":"2d","sessions":"3d","markers":"4d","pcap-bytes":"1GiB","pcap-age":"5d","flws":"9d"},"capture":{"enabled":true,"detail":"full"},"colour":"blue"}"#)
        let r = f.run(["retention", "show"])
        #expect(r.code == .ok)
        #expect(!r.out.contains("factory default"), "every known field came from the row")
        #expect(r.out.contains("unknown field 'colour' ignored"))
        #expect(r.out.contains("unknown field 'retention.flws' ignored"))
        #expect(value(r.out, "flows") == "1d" && value(r.out, "capture") == "on" && value(r.out, "capture-detail") == "full")
        try HistoryFixture.expectGolden(r.out, "retention-show-unknown.txt")
    }

    @Test func aWrongTypeDefaultsThatFieldOnly() throws {
        let f = try fixture(row: #"{"retention":{"flows":7,"refusals":"2d","sessions":"3d","markers":"4d","pcap-bytes":"1GiB","pcap-age":"bogus"},"capture":{"enabled":"yes","detail":"full"}}"#)
        let r = f.run(["retention", "show"])
        #expect(r.code == .ok)
        #expect(value(r.out, "flows") == "7d (factory default; the row's value: wrong type (number))")
        #expect(value(r.out, "pcap-age")?.hasPrefix("7d (factory default; the row's value: invalid value 'bogus'") == true)
        #expect(value(r.out, "capture") == "off (factory default; the row's value: wrong type (string))")
        #expect(value(r.out, "refusals") == "2d" && value(r.out, "capture-detail") == "full")
        try HistoryFixture.expectGolden(r.out, "retention-show-wrongtype.txt")
    }

    @Test func aRowThatIsNotJSONIsAnErrorWithTheRawText() throws {
        let f = try fixture(row: "flows=7d; oops")
        let r = f.run(["retention", "show"])
        #expect(r.code == .failure && r.out.isEmpty)
        #expect(r.err.contains("flows=7d; oops"))
        try HistoryFixture.expectGolden(r.err, "retention-show-notjson.txt")
        let j = f.run(["retention", "show", "--json"])
        #expect(j.code == .failure)
        try HistoryFixture.expectGolden(j.out, "retention-show-notjson.json")
        // An array is JSON but not an object: the same error.
        let arr = try fixture(row: "[1,2]")
        #expect(arr.run(["retention", "show"]).code == .failure)
        // Prune refuses to guess the operator's limits.
        let p = f.run(["prune"])
        #expect(p.code == .failure && p.err.contains("nothing was pruned"))
        // `set` replaces the broken row and says so.
        let s = f.run(["retention", "set", "flows=2d"])
        #expect(s.code == .ok && s.out.contains("was not JSON"))
        #expect(value(f.run(["retention", "show"]).out, "flows") == "2d")
    }

    @Test func setValidatesAndWritesAll() throws {
        let f = try fixture(row: nil)
        let before = try HistoryFixture.checksum(try f.store())
        let badKey = f.run(["retention", "set", "flows=7d", "flow=3d"])
        #expect(badKey.code == .usage && badKey.err.contains("unknown setting 'flow', did you mean 'flows'?"))
        let badValue = f.run(["retention", "set", "flows=7x"])
        #expect(badValue.code == .usage && badValue.err.contains("flows: unknown unit 'x' in '7x'; use ms, s, m, h, d, w"))
        let badSize = f.run(["retention", "set", "pcap-bytes=lots"])
        #expect(badSize.code == .usage && badSize.err.contains("pcap-bytes: 'lots' is not a size; write a size like 500MB"))
        let noEquals = f.run(["retention", "set", "flows"])
        #expect(noEquals.code == .usage && noEquals.err.contains("'flows' is not KEY=VALUE: give it a value, e.g. flows=VALUE"))
        #expect(!noEquals.err.contains("did you mean 'flows'"), "a bare key is not its own did-you-mean")
        #expect(f.run(["retention", "set", "flws"]).err.contains("'flws' is not KEY=VALUE, did you mean 'flows'?"))
        let zero = f.run(["retention", "set", "refusals=0d"])
        #expect(zero.code == .usage && zero.err.contains("longer than zero"))
        let underscore = f.run(["retention", "set", "pcap_bytes=1GB"])
        #expect(underscore.err.contains("did you mean 'pcap-bytes'?"))
        #expect(try HistoryFixture.checksum(try f.store()) == before, "a refused set writes nothing")

        let ok = f.run(["retention", "set", "flows=3d", "pcap-bytes=2GB", "markers=forever", "capture=on", "refusals=30d"])
        #expect(ok.code == .ok && ok.err.isEmpty)
        try HistoryFixture.expectGolden(ok.out, "retention-set.txt")
        let show = f.run(["retention", "show", "--json"])
        try HistoryFixture.expectGolden(show.out, "retention-show-set.json")
        let text = try f.store().settingsText()
        #expect(text?.contains(#""flows":"3d""#) == true && text?.contains(#""markers":"forever""#) == true)
        #expect(f.run(["retention", "frob"]).code == .usage)
        #expect(f.run(["retention", "set"]).code == .usage)
    }
}
