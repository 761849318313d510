/// A section as read: its header line and entries.
import Core
struct ConfigSection {
    var isInterface: Bool
    var line: Int
    var entries: [ConfigEntry] = []
}
