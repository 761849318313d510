import Core
/// A section as read: its header line and entries.
struct ConfigSection {
    var isInterface: Bool
    var line: Int
    var entries: [ConfigEntry] = []
}
