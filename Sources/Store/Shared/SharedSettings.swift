import Core

/// The settings every gateway of a shared store uses (schema v5, `tv_settings`): the retention
/// section of the settings row (`{"retention":{…}}`, the local row's format and keys), which
/// gateway stored it and when. Capture is not in it: it stays in each gateway's own `state.db`
/// (its pcap files are local). Each gateway keeps its local row's retention equal to the last
/// one it read, so a gateway cut off from the database keeps the same limits.
public struct SharedSettings: Hashable, Sendable {
    /// The stored JSON text.
    public var text: String
    /// When it was stored, Unix epoch ms.
    public var changedAt: Int64
    /// The gateway that stored it (`GatewayName`).
    public var gateway: String
    /// Its change number (`tv_change`).
    public var change: Int64

    /// A row.
    public init(text: String, changedAt: Int64, gateway: String, change: Int64) {
        self.text = text
        self.changedAt = changedAt
        self.gateway = gateway
        self.change = change
    }
}

extension Settings {
    /// The JSON paths a shared store shares (the retention section).
    public static func isShared(path: String) -> Bool { path.hasPrefix("retention.") }

    /// The keys of `retention set` that a shared store shares (`flows` … `pcap-age`).
    public static var sharedKeys: [String] { keys.filter { isShared(path: $0.path) }.map(\.key) }

    /// Decodes the shared row's text (`Settings.decode`, tolerant): its retention, with only the
    /// retention fields reported as defaulted (the capture section is not shared, never missing).
    public static func decodeShared(_ text: String) throws -> SettingsDecoding {
        var d = try decode(text)
        d.defaulted = d.defaulted.filter { isShared(path: $0.path) }
        d.unknown = d.unknown.filter { $0 != "capture" && !$0.hasPrefix("capture.") }
        d.settings.capture = .factory
        return d
    }

    /// `local` with the retention of `shared` (what a gateway of a shared store runs with).
    public func withRetention(of shared: Settings) -> Settings {
        Settings(retention: shared.retention, capture: capture)
    }
}
