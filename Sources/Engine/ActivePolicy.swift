import SystemIO
import Core
import Glibc
import Packet
import Policy
import Synchronization

/// The policy in force: the compiled rules, the generation they were stamped with, and a hit
/// counter per rule (and per default). A reload builds a new `ActivePolicy` with the next
/// generation and swaps it in; flows whose cached verdict carries an older generation are
/// re-evaluated on their next packet (docs/policy.md).
///
/// Hit counters count flow decisions (a flow's first packet, and its first packet after each
/// reload), not packets.
public final class ActivePolicy: @unchecked Sendable {
    // Safe: every stored property is immutable after init; `hits` points at atomics.
    public let compiled: CompiledPolicy
    /// The parsed files: rules, defaults, diagnostics, file names.
    public let set: PolicySet
    public let generation: UInt64
    /// Wall-clock time of the load, Unix epoch milliseconds.
    public let loadedAtMs: Int64
    /// Policy peer id per WireGuard peer handle (`PeerHandle.rawValue` indexes it).
    let peerIDs: [PolicyPeerID]
    /// Tier per peer handle (nil: unknown handle).
    let tiers: [PeerTier?]
    /// The next `during` boundary (epoch seconds), when any rule has a time window.
    let nextBoundary: Int64?
    private let hits: UnsafeMutablePointer<Atomic<UInt64>>
    private let hitSlots: Int

    init(compiled: CompiledPolicy, set: PolicySet, generation: UInt64, loadedAtMs: Int64,
         peers: [(handle: UInt32, name: String, tier: PeerTier)], nextBoundary: Int64?)
    {
        self.compiled = compiled
        self.set = set
        self.generation = generation
        self.loadedAtMs = loadedAtMs
        let top = Int(peers.map(\.handle).max() ?? 0) + 1
        var ids = [PolicyPeerID](repeating: .unknown, count: top)
        var tiers = [PeerTier?](repeating: nil, count: top)
        for p in peers {
            ids[Int(p.handle)] = compiled.peerID(named: p.name)
            tiers[Int(p.handle)] = p.tier
        }
        peerIDs = ids
        self.tiers = tiers
        self.nextBoundary = nextBoundary
        hitSlots = compiled.rules.count + 2
        hits = .allocate(capacity: hitSlots)
        for i in 0..<hitSlots { (hits + i).initialize(to: Atomic(0)) }
    }

    deinit {
        hits.deinitialize(count: hitSlots)
        hits.deallocate()
    }

    /// The same rules under a new generation (a `during` boundary passed, or peers changed).
    func restamped(generation: UInt64, peers: [(handle: UInt32, name: String, tier: PeerTier)], nextBoundary: Int64?) -> ActivePolicy {
        ActivePolicy(compiled: compiled, set: set, generation: generation, loadedAtMs: loadedAtMs, peers: peers,
                     nextBoundary: nextBoundary)
    }

    @inline(__always) public func peerID(_ handle: UInt32) -> PolicyPeerID {
        Int(handle) < peerIDs.count ? peerIDs[Int(handle)] : .unknown
    }

    @inline(__always) func tier(_ handle: UInt32) -> PeerTier? {
        Int(handle) < tiers.count ? tiers[Int(handle)] : nil
    }

    /// Counts one decision by `verdict`.
    @inline(__always) func hit(_ verdict: PolicyVerdict) {
        let slot = verdict.ruleIndex >= 0 ? Int(verdict.ruleIndex) : compiled.rules.count + (verdict.direction == .out ? 0 : 1)
        hits[slot].add(1, ordering: .relaxed)
    }

    /// Decisions by rule `index` (-1: the default of `direction`).
    public func hits(rule index: Int, direction: Direction = .out) -> UInt64 {
        let slot = index >= 0 ? index : compiled.rules.count + (direction == .out ? 0 : 1)
        return hits[slot].load(ordering: .relaxed)
    }

    /// Reads the policy directory, binds `gateway` in its rules to `gateway` (the interface's own
    /// addresses) and compiles it. A set with errors is refused: the caller keeps the policy it
    /// has (or, at start, refuses to start).
    public static func load(directory: String, gateway: [IPAddress]) -> Result<(PolicySet, CompiledPolicy), PolicyLoadFailure> {
        let set: PolicySet
        do {
            set = try PolicyParser.parse(directory: directory)
        } catch {
            return .failure(PolicyLoadFailure(message: "\(error)", diagnostics: []))
        }
        if set.hasErrors {
            return .failure(PolicyLoadFailure(message: "\(set.errors.count) error(s) in \(directory)", diagnostics: set.diagnostics))
        }
        let bound = set.bindingGateway(gateway)
        return .success((bound, CompiledPolicy(bound)))
    }

    /// The UTC offset of local time now, in seconds (the router's time zone, TZ honoured).
    static func localUTCOffset(epochSeconds: Int64) -> Int {
        var t = time_t(epochSeconds)
        var tmv = tm()
        localtime_r(&t, &tmv)
        return Int(tmv.tm_gmtoff)
    }
}

/// A policy directory that could not be loaded: the reason, and the parser's diagnostics.
public struct PolicyLoadFailure: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var diagnostics: [PolicyDiagnostic]
    public var description: String {
        ([message] + diagnostics.map(\.description)).joined(separator: "\n")
    }
}
