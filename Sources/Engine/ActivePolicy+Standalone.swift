import Core
import Policy

extension ActivePolicy {
    /// A policy at generation 1 outside an engine (benchmarks and tests that drive `History`).
    public static func standalone(_ set: PolicySet, peers: [(handle: UInt32, name: String, tier: PeerTier)]) -> ActivePolicy {
        ActivePolicy(compiled: CompiledPolicy(set), set: set, generation: 1, loadedAtMs: 0, peers: peers, nextBoundary: nil)
    }
}
