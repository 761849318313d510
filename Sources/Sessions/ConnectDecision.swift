import Core
/// What to do when a peer connects (a handshake completed and it has no live session).
public enum ConnectDecision: Sendable, Hashable {
    /// Premium: admit, no window.
    case admitUnlimited
    /// Free: open this new window (store it) and admit.
    case openWindow(WindowDates)
    /// Free, inside its window: admit until the stored end (never extended).
    case resume(WindowDates)
    /// Free, in its pause: refuse (drop keys, refuse initiations until `reconnectAt`).
    case refuse(WindowDates)
}
