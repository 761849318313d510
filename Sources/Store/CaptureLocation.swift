/// Where a flow's first captured packet sits: pcap file sequence number and byte offset in it
/// (DESIGN.md §8).
public struct CaptureLocation: Hashable, Sendable {
    /// The rotated file's sequence number.
    public var fileSequence: Int64
    /// Byte offset of the packet record inside that file.
    public var offset: Int64

    /// A location.
    public init(fileSequence: Int64, offset: Int64) {
        self.fileSequence = fileSequence
        self.offset = offset
    }
}
