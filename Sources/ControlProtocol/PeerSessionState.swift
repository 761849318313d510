import Core
/// A peer's session state as `tunnelctl peers` shows it. An open set of strings on the wire, so
/// a newer daemon's states decode as themselves.
public struct PeerSessionState: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The wire string.
    public var rawValue: String
    /// A state from its wire string.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A handshake completed and the session is live.
    public static let connected = PeerSessionState(rawValue: "connected")
    /// No live session (never connected, idle, or kicked).
    public static let disconnected = PeerSessionState(rawValue: "disconnected")
    /// Free tier: the window is used up; handshakes are refused until `reconnectAtMs`.
    public static let paused = PeerSessionState(rawValue: "paused")
    /// `Disabled = true`: refused whatever its tier and window, until enabled.
    public static let disabled = PeerSessionState(rawValue: "disabled")
    /// Its `Expires` passed: refused whatever its tier and window, until the date moves.
    public static let expired = PeerSessionState(rawValue: "expired")

    /// Every state a tunneld of this version reports (metrics lists them all per peer).
    public static let all: [PeerSessionState] = [.connected, .disconnected, .paused, .disabled, .expired]

    /// The wire string.
    public var description: String { rawValue }
}
