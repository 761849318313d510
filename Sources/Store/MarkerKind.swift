import Core
/// Who placed a marker: the operator (`tunnelctl audit mark`) or the daemon.
public enum MarkerKind: String, Sendable, CaseIterable {
    case manual, automatic
}
