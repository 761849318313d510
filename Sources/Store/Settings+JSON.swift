import Core
/// The settings row's JSON form and its tolerant decoding (docs/store.md):
///
/// ```json
/// {"retention":{"flows":"7d","refusals":"30d","sessions":"90d","markers":"365d",
///               "pcap-bytes":"2GiB","pcap-age":"7d"},
///  "capture":{"enabled":false,"detail":"metadata"}}
/// ```
extension Settings {
    /// The JSON text stored in the row (stable key order, human units).
    public var json: String { "{\(retentionMember),\(captureMember)}" }

    /// The text a shared store keeps (`tv_settings`): the retention section alone, same format.
    public var sharedJSON: String { "{\(retentionMember)}" }

    /// `"retention":{…}`, the row's first member.
    private var retentionMember: String {
        let r = retention
        func q(_ s: String) -> String { "\"\(s)\"" }
        return "\"retention\":{"
            + "\"flows\":\(q(DurationFormat.format(ms: r.flowsMaxAgeMs))),"
            + "\"refusals\":\(q(DurationFormat.format(ms: r.refusalsMaxAgeMs))),"
            + "\"sessions\":\(q(DurationFormat.format(ms: r.sessionsMaxAgeMs))),"
            + "\"markers\":\(q(DurationFormat.format(ms: r.markersMaxAgeMs))),"
            + "\"pcap-bytes\":\(q(SizeFormat.format(bytes: r.pcapMaxBytes))),"
            + "\"pcap-age\":\(q(DurationFormat.format(ms: r.pcapMaxAgeMs)))}"
    }

    /// `"capture":{…}`, the row's second member (never shared: pcap files are local).
    private var captureMember: String {
        "\"capture\":{\"enabled\":\(capture.enabled),\"detail\":\"\(capture.detail.rawValue)\"}"
    }

    /// Decodes the row's text field by field. A missing, unknown-valued or wrongly typed field
    /// takes its factory value and is listed in `defaulted`; unknown fields are listed in
    /// `unknown`; nil or blank text gives factory settings with `wasEmpty`. Text that is not a
    /// JSON object throws `StoreError.settingsNotJSON` carrying the raw text.
    public static func decode(_ text: String?) throws -> SettingsDecoding {
        var result = SettingsDecoding(settings: .factory, defaulted: [], unknown: [], wasEmpty: false)
        guard let text, !text.trimmedSpaces().isEmpty else {
            result.wasEmpty = true
            result.defaulted = keys.map { ($0.path, .missing) }
            return result
        }
        let root: [String: JSONValue]
        do {
            guard case let .object(o) = try JSONValue.parse(text) else {
                throw StoreError.settingsNotJSON(raw: text, detail: "the top level is not an object")
            }
            root = o
        } catch let e as StoreError {
            throw e
        } catch {
            throw StoreError.settingsNotJSON(raw: text, detail: "not valid JSON")
        }

        func section(_ name: String, _ fields: [String]) -> [String: JSONValue] {
            switch root[name] {
            case nil:
                return [:]
            case let .object(o)?:
                for k in o.keys.sorted() where !fields.contains(k) { result.unknown.append("\(name).\(k)") }
                return o
            case let v?:
                for f in fields { result.defaulted.append(("\(name).\(f)", .wrongType(found: v.typeName))) }
                return [:]
            }
        }
        for k in root.keys.sorted() where k != "retention" && k != "capture" { result.unknown.append(k) }

        let retentionFields = ["flows", "refusals", "sessions", "markers", "pcap-bytes", "pcap-age"]
        let retentionWrong = root["retention"].map { if case .object = $0 { false } else { true } } ?? false
        let r = section("retention", retentionFields)
        let captureWrong = root["capture"].map { if case .object = $0 { false } else { true } } ?? false
        let c = section("capture", ["enabled", "detail"])

        // One field: returns the parsed value, or nil after recording why the factory value stays.
        func field<T>(_ sectionName: String, _ wrong: Bool, _ obj: [String: JSONValue], _ name: String,
                      _ parse: (JSONValue) -> Result<T, SettingsDecoding.Reason>) -> T? {
            if wrong { return nil }
            guard let v = obj[name] else {
                result.defaulted.append(("\(sectionName).\(name)", .missing))
                return nil
            }
            switch parse(v) {
            case let .success(t): return t
            case let .failure(reason):
                result.defaulted.append(("\(sectionName).\(name)", reason))
                return nil
            }
        }
        func age(_ v: JSONValue) -> Result<Int64?, SettingsDecoding.Reason> {
            guard case let .string(s) = v else { return .failure(.wrongType(found: v.typeName)) }
            do { return .success(try DurationFormat.parse(s, allowForever: true)) } catch {
                return .failure(.invalid(value: s, message: error.description))
            }
        }
        func size(_ v: JSONValue) -> Result<Int64?, SettingsDecoding.Reason> {
            guard case let .string(s) = v else { return .failure(.wrongType(found: v.typeName)) }
            do { return .success(try SizeFormat.parse(s)) } catch {
                return .failure(.invalid(value: s, message: error.description))
            }
        }

        var s = Settings.factory
        if let v = field("retention", retentionWrong, r, "flows", age) { s.retention.flowsMaxAgeMs = v }
        if let v = field("retention", retentionWrong, r, "refusals", age) { s.retention.refusalsMaxAgeMs = v }
        if let v = field("retention", retentionWrong, r, "sessions", age) { s.retention.sessionsMaxAgeMs = v }
        if let v = field("retention", retentionWrong, r, "markers", age) { s.retention.markersMaxAgeMs = v }
        if let v = field("retention", retentionWrong, r, "pcap-bytes", size) { s.retention.pcapMaxBytes = v }
        if let v = field("retention", retentionWrong, r, "pcap-age", age) { s.retention.pcapMaxAgeMs = v }
        if let v = field("capture", captureWrong, c, "enabled", { v -> Result<Bool, SettingsDecoding.Reason> in
            if case let .bool(b) = v { return .success(b) }
            return .failure(.wrongType(found: v.typeName))
        }) { s.capture.enabled = v }
        if let v = field("capture", captureWrong, c, "detail", { v -> Result<CaptureDetail, SettingsDecoding.Reason> in
            guard case let .string(t) = v else { return .failure(.wrongType(found: v.typeName)) }
            guard let d = CaptureDetail(rawValue: t) else { return .failure(.invalid(value: t, message: "expected metadata or full")) }
            return .success(d)
        }) { s.capture.detail = v }
        result.settings = s
        // Report in the documented key order.
        let order = keys.map(\.path)
        result.defaulted.sort { (order.firstIndex(of: $0.path) ?? 99) < (order.firstIndex(of: $1.path) ?? 99) }
        return result
    }
}
