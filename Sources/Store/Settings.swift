import Core
/// The store's settings row (docs/store.md): retention and capture, kept as one JSON object
/// and decoded field by field (`Settings.decode`).
public struct Settings: Hashable, Sendable {
    /// How long history is kept.
    public var retention: RetentionSettings
    /// Capture location of the first packet, if captured.
    public var capture: CaptureSettings

    /// Factory settings.
    public static let factory = Settings(retention: .factory, capture: .factory)

    /// Settings from their parts.
    public init(retention: RetentionSettings, capture: CaptureSettings) {
        self.retention = retention
        self.capture = capture
    }

    /// The keys `retention set` and `capture` accept, in display order, with their JSON paths.
    public static let keys: [(key: String, path: String)] = [
        ("flows", "retention.flows"), ("refusals", "retention.refusals"), ("sessions", "retention.sessions"),
        ("markers", "retention.markers"), ("pcap-bytes", "retention.pcap-bytes"), ("pcap-age", "retention.pcap-age"),
        ("capture", "capture.enabled"), ("capture-detail", "capture.detail"),
    ]

    /// The current value of `key` as text (`7d`, `2GiB`, `on`, `metadata`); nil for an unknown key.
    public func value(forKey key: String) -> String? {
        let r = retention
        switch key {
        case "flows": return DurationFormat.format(ms: r.flowsMaxAgeMs)
        case "refusals": return DurationFormat.format(ms: r.refusalsMaxAgeMs)
        case "sessions": return DurationFormat.format(ms: r.sessionsMaxAgeMs)
        case "markers": return DurationFormat.format(ms: r.markersMaxAgeMs)
        case "pcap-bytes": return SizeFormat.format(bytes: r.pcapMaxBytes)
        case "pcap-age": return DurationFormat.format(ms: r.pcapMaxAgeMs)
        case "capture": return capture.enabled ? "on" : "off"
        case "capture-detail": return capture.detail.rawValue
        default: return nil
        }
    }

    /// Sets `key` from text a person typed (`flows=7d` → `setting("flows", "7d")`). Throws a
    /// `SettingValueError` naming the key, the value and what would be accepted.
    public mutating func set(_ key: String, _ text: String) throws {
        func age() throws -> Int64? {
            do { return try DurationFormat.parse(text, allowForever: true) } catch {
                throw SettingValueError(key: key, value: text, message: error.description)
            }
        }
        switch key {
        case "flows": retention.flowsMaxAgeMs = try age()
        case "refusals": retention.refusalsMaxAgeMs = try age()
        case "sessions": retention.sessionsMaxAgeMs = try age()
        case "markers": retention.markersMaxAgeMs = try age()
        case "pcap-age": retention.pcapMaxAgeMs = try age()
        case "pcap-bytes":
            do { retention.pcapMaxBytes = try SizeFormat.parse(text) } catch {
                throw SettingValueError(key: key, value: text, message: error.description)
            }
        case "capture":
            switch text.lowercased() {
            case "on", "true", "yes": capture.enabled = true
            case "off", "false", "no": capture.enabled = false
            default: throw SettingValueError(key: key, value: text, message: "expected on or off")
            }
        case "capture-detail":
            guard let d = CaptureDetail(rawValue: text.lowercased()) else {
                throw SettingValueError(key: key, value: text, message: "expected metadata or full")
            }
            capture.detail = d
        default:
            let known = Settings.keys.map(\.key).joined(separator: ", ")
            throw SettingValueError(key: nil, value: key, message: "unknown setting; known settings: \(known)")
        }
    }
}
