/// How much of each packet capture keeps (the settings row's `capture_detail`, docs/ring.md, docs/capture.md).
///
/// The snapshot length lives in the pcap file's global header, so it belongs to the file: a
/// change of detail is applied by rotating to a new file.
public enum CaptureDetail: String, Sendable, Hashable, CaseIterable, Codable, CustomStringConvertible {
    /// Headers only: the first 128 bytes of each packet.
    case metadata
    /// Whole packets (up to 262,144 bytes, libpcap's maximum snapshot length).
    case full

    /// The snapshot length written into the file header and applied to each record.
    public var snaplen: Int32 {
        switch self {
        case .metadata: 128
        case .full: 262_144
        }
    }

    /// `metadata` or `full`.
    public var description: String { rawValue }
}
