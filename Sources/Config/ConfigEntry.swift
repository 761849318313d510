import Core
/// One `Key = Value` line as read.
struct ConfigEntry {
    var key: String  // canonical spelling
    var value: String
    var line: Int
}
