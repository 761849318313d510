/// How much of each packet capture keeps (DESIGN.md §8): `metadata` 128 bytes, `full` 262144.
public enum CaptureDetail: String, Sendable, CaseIterable {
    case metadata, full

    /// The pcap snaplen for this detail.
    public var snaplen: Int { self == .metadata ? 128 : 262_144 }
}
