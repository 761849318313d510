import Core
/// Which packets `CaptureReader.extract` copies.
public enum CaptureSelection: Sendable, Equatable {
    /// Every packet (narrowed by the BPF filter, if any).
    case all
    /// The packets of one flow, both directions; reading starts at `from` (the flow's first
    /// recorded location) when given, and stops after packets later than `until` (ns) if given.
    case flow(CaptureFlowKey, from: CaptureLocation?, until: UInt64?)
    /// Exactly the records at these locations (for example those of ring records).
    case locations([CaptureLocation])
}
