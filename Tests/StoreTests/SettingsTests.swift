import Core
import Testing
@testable import Store

@Suite struct SettingsTests {
    static let day: Int64 = 86_400_000

    @Test func factoryRoundTripsThroughJSON() throws {
        let d = try Settings.decode(Settings.factory.json)
        #expect(d.settings == .factory && d.defaulted.isEmpty && d.unknown.isEmpty && !d.wasEmpty)
        var s = Settings.factory
        try s.set("flows", "12h")
        try s.set("pcap-bytes", "500MB")
        try s.set("markers", "forever")
        try s.set("capture", "on")
        try s.set("capture-detail", "full")
        let back = try Settings.decode(s.json)
        #expect(back.settings == s && back.defaulted.isEmpty)
        #expect(s.value(forKey: "flows") == "12h" && s.value(forKey: "pcap-bytes") == "500MB" && s.value(forKey: "markers") == "forever")
    }

    @Test func missingFieldsTakeFactoryValuesTheRestAreKept() throws {
        let d = try Settings.decode(#"{"retention":{"flows":"1d"}}"#)
        #expect(d.settings.retention.flowsMaxAgeMs == SettingsTests.day)
        #expect(d.settings.retention.refusalsMaxAgeMs == RetentionSettings.factory.refusalsMaxAgeMs)
        #expect(d.settings.capture == .factory)
        #expect(d.defaultedPaths == ["retention.refusals", "retention.sessions", "retention.markers", "retention.pcap-bytes",
                                     "retention.pcap-age", "capture.enabled", "capture.detail"])
        #expect(d.defaulted.allSatisfy { $0.reason == .missing })
    }

    @Test func unknownFieldsAreReportedAndIgnored() throws {
        let d = try Settings.decode(#"{"retention":{"flows":"2d","colour":"blue"},"capture":{"enabled":true,"detail":"full"},"future":1}"#)
        #expect(d.unknown == ["future", "retention.colour"])
        #expect(d.settings.retention.flowsMaxAgeMs == 2 * SettingsTests.day)
        #expect(d.settings.capture == CaptureSettings(enabled: true, detail: .full))
    }

    @Test func aWrongTypeResetsOnlyThatField() throws {
        let d = try Settings.decode(#"{"retention":{"flows":7,"refusals":"3d"},"capture":{"enabled":"yes","detail":"full"}}"#)
        #expect(d.settings.retention.flowsMaxAgeMs == RetentionSettings.factory.flowsMaxAgeMs)
        #expect(d.settings.retention.refusalsMaxAgeMs == 3 * SettingsTests.day)
        #expect(d.settings.capture == CaptureSettings(enabled: false, detail: .full))
        let reasons = Dictionary(uniqueKeysWithValues: d.defaulted.map { ($0.path, $0.reason) })
        #expect(reasons["retention.flows"] == .wrongType(found: "number"))
        #expect(reasons["capture.enabled"] == .wrongType(found: "string"))
        #expect(reasons["retention.refusals"] == nil)
    }

    @Test func anInvalidValueResetsOnlyThatField() throws {
        let d = try Settings.decode(#"{"retention":{"flows":"7x","pcap-bytes":"2GiB"},"capture":{"detail":"everything"}}"#)
        let reasons = Dictionary(uniqueKeysWithValues: d.defaulted.map { ($0.path, $0.reason) })
        guard case .invalid(let v, _)? = reasons["retention.flows"] else { Issue.record("flows not invalid"); return }
        #expect(v == "7x")
        guard case .invalid(let w, _)? = reasons["capture.detail"] else { Issue.record("detail not invalid"); return }
        #expect(w == "everything")
        #expect(d.settings.retention.pcapMaxBytes == 2 << 30)
    }

    @Test func aSectionOfTheWrongTypeResetsItsFields() throws {
        let d = try Settings.decode(#"{"retention":[1,2],"capture":{"enabled":true}}"#)
        #expect(d.settings.retention == .factory)
        #expect(d.settings.capture.enabled)
        #expect(d.defaulted.filter { $0.reason == .wrongType(found: "array") }.count == 6)
    }

    @Test func notJSONIsATypedErrorCarryingTheRawText() {
        for raw in ["retention: 7d", "{\"retention\":", "[1,2,3]", "\"text\"", "42"] {
            do {
                _ = try Settings.decode(raw)
                Issue.record("decoded '\(raw)'")
            } catch let e as StoreError {
                guard case .settingsNotJSON(let text, _) = e else { Issue.record("wrong error \(e)"); continue }
                #expect(text == raw)
                #expect(e.description.contains(raw))
            } catch { Issue.record("untyped error \(error)") }
        }
    }

    @Test func everyTruncationOfTheRowIsAnErrorOrDecodesNeverACrash() throws {
        var s = Settings.factory
        try s.set("flows", "1h30m")
        let text = s.json
        for n in 0..<text.count {
            let prefix = String(text.prefix(n))
            do {
                let d = try Settings.decode(prefix)
                #expect(n == 0 && d.wasEmpty, "truncation to \(n) decoded")
            } catch let e as StoreError {
                guard case .settingsNotJSON(let raw, _) = e else { Issue.record("\(e)"); continue }
                #expect(raw == prefix)
            }
        }
        #expect(try Settings.decode(text).settings == s)
    }

    @Test func hostileJSONIsAnErrorNotACrash() {
        for raw in [String(repeating: "[", count: 100_000), String(repeating: "{\"a\":", count: 50_000),
                    #"{"retention":{"flows":1e999}}"#, "\u{0}", #"{"retention":{"flows":"\ud800"}}"#] {
            do {
                let d = try Settings.decode(raw)
                #expect(d.settings.retention.flowsMaxAgeMs == RetentionSettings.factory.flowsMaxAgeMs)
            } catch let e as StoreError {
                guard case .settingsNotJSON = e else { Issue.record("\(e)"); continue }
            } catch { Issue.record("untyped \(error)") }
        }
    }

    @Test func anEmptyRowOrNoRowIsFactoryWithEverythingDefaulted() throws {
        for raw in [nil, "", "  \n"] as [String?] {
            let d = try Settings.decode(raw)
            #expect(d.wasEmpty && d.settings == .factory && d.defaulted.count == Settings.keys.count)
        }
        let empty = try Settings.decode("{}")
        #expect(!empty.wasEmpty && empty.settings == .factory && empty.defaulted.count == Settings.keys.count)
    }

    @Test func theStoreKeepsTheRowAndReportsNotJSON() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let store = try StateStore(path: dir.db)
        #expect(try store.settings().wasEmpty)
        var s = Settings.factory
        try s.set("sessions", "30d")
        try store.putSettings(s, at: 1)
        #expect(try store.settings().settings == s)
        try store.putSettingsText("oops", at: 2)
        #expect(throws: StoreError.settingsNotJSON(raw: "oops", detail: "not valid JSON")) { try store.settings() }
        #expect(try store.settingsText() == "oops")
    }

    @Test func setRejectsBadKeysAndValuesWithClearMessages() {
        var s = Settings.factory
        do { try s.set("flow", "7d"); Issue.record("accepted key 'flow'") } catch let e as SettingValueError {
            #expect(e.description.contains("unknown setting") && e.description.contains("flows"))
        } catch { Issue.record("\(error)") }
        do { try s.set("pcap-bytes", "lots"); Issue.record("accepted 'lots'") } catch let e as SettingValueError {
            #expect(e.key == "pcap-bytes" && e.description.hasPrefix("pcap-bytes: 'lots' is not a size"))
        } catch { Issue.record("\(error)") }
        #expect(s == .factory)
    }
}
