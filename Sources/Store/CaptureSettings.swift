import Core
/// Packet capture switches stored with the settings.
public struct CaptureSettings: Hashable, Sendable {
    /// Whether packets are captured.
    public var enabled: Bool
    /// How much of each packet is kept / free text.
    public var detail: CaptureDetail

    /// Factory values: capture off, metadata detail.
    public static let factory = CaptureSettings(enabled: false, detail: .metadata)

    /// Capture settings.
    public init(enabled: Bool, detail: CaptureDetail) {
        self.enabled = enabled
        self.detail = detail
    }
}
