// TEST-ONLY (issue 16): until the lead's `[Tier NAME]`/`[Peer]` limit keys land, the e2e script
// scripts/e2e/limits-rate.sh sets per-peer limits through the environment. The lead replaces
// this hook with the config's resolved limits; nothing else reads it.
import Core
import Engine
import Glibc

enum TestLimits {
    /// Applies `TUNNELD_TEST_LIMITS="NAME:rateUp=BPS,rateDown=BPS,maxFlows=N,newFlowRate=N;NAME2:…"`
    /// (bits per second, flows, flows per second) to the named peers. Absent: nothing happens.
    static func apply(to engine: GatewayEngine, log: (String) -> Void) {
        guard let raw = getenv("TUNNELD_TEST_LIMITS") else { return }
        for spec in String(cString: raw).split(separator: ";") {
            let parts = spec.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, let peer = engine.peer(named: String(parts[0])) else {
                log("TUNNELD_TEST_LIMITS: no peer for '\(spec)'")
                continue
            }
            var limits = peer.limits
            for kv in parts[1].split(separator: ",") {
                let f = kv.split(separator: "=", maxSplits: 1)
                guard f.count == 2, let v = UInt64(f[1]) else { continue }
                switch f[0] {
                case "rate": limits.rateUpBitsPerSecond = v; limits.rateDownBitsPerSecond = v
                case "rateUp": limits.rateUpBitsPerSecond = v
                case "rateDown": limits.rateDownBitsPerSecond = v
                case "maxFlows": limits.maxFlows = Int(v)
                case "newFlowRate": limits.newFlowsPerSecond = UInt32(clamping: v)
                default: log("TUNNELD_TEST_LIMITS: unknown key \(f[0])")
                }
            }
            _ = engine.registry.update(peer.handle) { $0.limits = limits }
            log("TUNNELD_TEST_LIMITS (test only): \(parts[0]) \(limits)")
        }
    }
}
