import Engine
import Core
import Sessions
import Store

/// A record the watchdog hands to its sink (the daemon turns them into `StoreRecord`s).
public enum WatchdogRecord: Sendable, Hashable {
    /// A window was opened here (`opened`: the peer's next window, decided by this watchdog), or
    /// it moved, or its byte use moved on, or a window another gateway opened was adopted.
    case windowPut(peer: String, WindowDates, used: ByteUse = .zero, opened: Bool = false)
    /// A peer lost its window (moved to premium).
    case windowDeleted(peer: String)
    /// A session started.
    case sessionOpened(peer: String, at: Int64)
    /// A session ended.
    case sessionClosed(peer: String, at: Int64, reason: SessionEndReason, rx: UInt64, tx: UInt64)
    /// A refused handshake during the pause after the window ending at `windowEnd`.
    case refused(peer: String, windowEnd: Int64, at: Int64, reason: WatchdogRules.PauseReason = .sessionTime)
    /// A refused handshake of a disabled or expired peer (`reason`: `disabled`, `expired`).
    case restricted(peer: String, reason: String, at: Int64)
    /// An automatic marker.
    case marker(at: Int64, label: String, detail: String?)
}
