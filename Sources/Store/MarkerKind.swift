/// Who placed a marker: the operator (`tunnelctl audit mark`) or the daemon.
import Core
public enum MarkerKind: String, Sendable, CaseIterable {
    case manual, automatic
}
