// The small integer that names a peer inside a device.
import Core

/// Names a peer of a `WireGuardDevice`. Handles are assigned by `addPeer` in increasing order and
/// never reused while the device lives, so a stale handle simply finds nothing.
public struct PeerHandle: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The handle's number (1, 2, 3, …).
    public let rawValue: UInt32

    /// A handle from its number (the device hands these out; tests may build them).
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Handles order by number (= order of `addPeer`).
    public static func < (a: PeerHandle, b: PeerHandle) -> Bool { a.rawValue < b.rawValue }

    /// `peer#N`.
    public var description: String { "peer#\(rawValue)" }
}
