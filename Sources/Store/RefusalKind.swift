import Core
/// What was refused: one flow by a rule, or a whole peer outside its session window.
public enum RefusalKind: String, Sendable, CaseIterable {
    case flow, session
}
