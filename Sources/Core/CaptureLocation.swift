/// Where one packet's pcap record is: the capture file's sequence and the record's byte offset
/// in that file (its 16-byte record header starts there). Offsets restart in every file, which is
/// why the sequence travels with them. Offset 0 is never a record (every file starts with its
/// 24-byte global header), so the live ring uses it for "not captured". The flow table, the
/// store's flow rows, the ring and the capture index all carry this one type.
public struct CaptureLocation: Hashable, Sendable, Comparable, CustomStringConvertible, Codable {
    /// The file's sequence number (`capture-000042.pcap` is 42).
    public var fileSequence: UInt32
    /// Byte offset of the record in that file.
    public var offset: UInt64

    /// A location from its parts.
    public init(fileSequence: UInt32, offset: UInt64) {
        self.fileSequence = fileSequence
        self.offset = offset
    }

    public static func < (a: CaptureLocation, b: CaptureLocation) -> Bool {
        (a.fileSequence, a.offset) < (b.fileSequence, b.offset)
    }

    /// `SEQ:OFFSET`.
    public var description: String { "\(fileSequence):\(offset)" }

}
