/// One `Key = Value` line as read.
import Core
struct ConfigEntry {
    var key: String  // canonical spelling
    var value: String
    var line: Int
}
