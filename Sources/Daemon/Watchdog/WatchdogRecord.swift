import Engine
import Core
import Sessions
import Store

/// A record the watchdog hands to its sink (the daemon turns them into `StoreRecord`s).
public enum WatchdogRecord: Sendable, Hashable {
    /// A window was opened (or replaced, or its byte use moved on).
    case windowPut(peer: String, WindowDates, used: ByteUse = .zero)
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
