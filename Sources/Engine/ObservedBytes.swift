import SystemIO
import Core
/// The bytes of the packet being decided, handed to the observer.
///
/// `@unchecked Sendable`: the pointer is read only during the call that receives it, on the
/// calling thread, and never stored. (The wrapper exists so passing the batch's memory next to
/// the flow table — a `sending` value inside its mutex — does not merge their isolation regions.)
public struct ObservedBytes: @unchecked Sendable {
    /// The IP packet.
    public let bytes: UnsafeRawBufferPointer
    /// Wraps `bytes`.
    @inline(__always) public init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }
    /// Its length.
    @inline(__always) public var count: Int { bytes.count }
}
