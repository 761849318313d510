import Core
import Packet

extension CompiledPolicy {
    /// Decides a flow whose host name is the bytes `host` (as the extractors give it: ASCII,
    /// compared case-insensitively, one trailing dot ignored); `q.host` is not looked at.
    /// The same verdict as `evaluate` with `q.host` set to that name, without making a String.
    /// Allocates nothing.
    public func evaluate(_ q: PolicyQuery, host: UnsafeRawBufferPointer) -> PolicyVerdict {
        let found = firstMatch(q, hostClass: hostActive ? hostOffset(bytes: host) : hostNone)
        if found < 0 { return defaultVerdict(q.direction) }
        return PolicyVerdict(action: rules.action(found), ruleIndex: Int32(found), direction: q.direction)
    }

    /// Decides a flow known by several names — the DNS names its peer looked up for the
    /// destination (`AddressNameCache`): any of them matching a `host` rule counts, so the
    /// deciding rule is the first one that matches the flow with at least one of the names
    /// (the earliest of the per-name verdicts). With no names it is `evaluate` without a host.
    /// Allocates nothing.
    public func evaluate(_ q: PolicyQuery, anyOf names: AddressNames) -> PolicyVerdict {
        var noHost = q
        noHost.host = nil
        guard hostActive else { return evaluate(noHost) }
        var best = -1
        for name in names {
            let found = firstMatch(q, hostClass: hostOffset(bytes: name))
            if found >= 0 && (best < 0 || found < best) { best = found }
        }
        if best < 0 {
            // No name at all (or none matched anything): as without a host.
            let found = firstMatch(q, hostClass: hostNone)
            if found < 0 { return defaultVerdict(q.direction) }
            best = found
        }
        return PolicyVerdict(action: rules.action(best), ruleIndex: Int32(best), direction: q.direction)
    }
}
