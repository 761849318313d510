import Core
/// `capture`: the capture settings the daemon now runs with. Sent once they are in force on the
/// data path (the next packet is captured, or not), so `tunnelctl capture on|off` can say so.
public struct CaptureReply: Hashable, Sendable, Codable {
    /// Capture on or off.
    public var enabled: Bool
    /// `metadata` or `full`.
    public var detail: String
    /// The capture directory (`StateDirectory/capture`).
    public var directory: String

    /// A reply from its fields.
    public init(enabled: Bool, detail: String, directory: String) {
        self.enabled = enabled
        self.detail = detail
        self.directory = directory
    }
}
