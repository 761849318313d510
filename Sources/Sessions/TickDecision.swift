import Core


/// What a watchdog tick wants for one peer: whether the device refuses it, whether its live
/// session ends now (and why), and a window to open now (a connected peer moved to free).
public struct TickDecision: Sendable, Hashable {
    /// True while the peer must be refused (its pause).
    public var refuse: Bool
    /// End the live session now with this reason.
    public var endSession: SessionEndReason?
    /// Open (store) this window now.
    public var openWindow: WindowDates?

    /// A decision from its parts.
    public init(refuse: Bool, endSession: SessionEndReason? = nil, openWindow: WindowDates? = nil) {
        self.refuse = refuse
        self.endSession = endSession
        self.openWindow = openWindow
    }
}
