import Core
import Testing

/// Tier classes and per-peer overrides (issue 16): the resolution order peer > tier > defaults,
/// `none` overriding a lower layer, the value parsers.
@Suite struct LimitResolutionTests {
    func settings(_ pairs: [(String, String)]) throws -> LimitSettings {
        var l = LimitSettings()
        for (k, v) in pairs { try l.set(k, v) }
        return l
    }

    @Test func peerOverTierOverDefaults() throws {
        let trial = try settings([("Session", "30m"), ("Pause", "23h30m"), ("Quota", "1GiB"), ("Rate", "5Mbit"),
                                  ("IdleTimeout", "10m"), ("MaxFlows", "512"), ("NewFlowRate", "50/s")])
        let tiers = TierClasses(freeSessionMs: 900_000, freePauseMs: 2_700_000, classes: [PeerTier(rawValue: "trial")!: trial])
        let t = tiers.resolve(tier: PeerTier(rawValue: "trial")!)
        #expect(t == PeerLimits(sessionMs: 1_800_000, pauseMs: 84_600_000, quotaBytes: 1 << 30, rateUpBitsPerSecond: 5_000_000,
                                rateDownBitsPerSecond: 5_000_000, idleTimeoutMs: 600_000, maxFlows: 512, newFlowsPerSecond: 50))
        // The peer's own keys win, key by key; `none` removes a limit its tier sets.
        let own = try settings([("Quota", "none"), ("RateDown", "10Mbit"), ("Session", "1h")])
        let p = tiers.resolve(tier: PeerTier(rawValue: "trial")!, peer: own)
        #expect(p.quotaBytes == nil && p.rateDownBitsPerSecond == 10_000_000 && p.rateUpBitsPerSecond == 5_000_000)
        #expect(p.sessionMs == 3_600_000 && p.pauseMs == 84_600_000 && p.maxFlows == 512)
        // Defaults: free is FreeSession then FreePause, premium nothing, an unknown tier nothing.
        #expect(tiers.resolve(tier: .free) == PeerLimits(sessionMs: 900_000, pauseMs: 2_700_000))
        #expect(tiers.resolve(tier: .premium).isUnlimited)
        #expect(tiers.resolve(tier: PeerTier(rawValue: "nosuch")!).isUnlimited)
        // [Tier free] changes the predefined free window; a premium peer may still get a rate.
        let changed = TierClasses(freeSessionMs: 900_000, freePauseMs: 2_700_000, classes: [
            .free: try settings([("Session", "1h")]), .premium: try settings([("Rate", "100Mbit")]),
        ])
        #expect(changed.resolve(tier: .free) == PeerLimits(sessionMs: 3_600_000, pauseMs: 2_700_000))
        #expect(changed.resolve(tier: .premium) == PeerLimits(pauseMs: 2_700_000, rateUpBitsPerSecond: 100_000_000, rateDownBitsPerSecond: 100_000_000))
        // A peer of free with Session = none is not windowed any more.
        #expect(!changed.resolve(tier: .free, peer: try settings([("Session", "none")])).isWindowed)
        // A quota alone makes a window.
        #expect(tiers.resolve(tier: .premium, peer: try settings([("QuotaDown", "20MiB")])).isWindowed)
    }

    @Test func values() throws {
        #expect(try LimitValue.rate("5Mbit") == 5_000_000)
        #expect(try LimitValue.rate("10Mbit/s") == 10_000_000)
        #expect(try LimitValue.rate("500kbit") == 500_000)
        #expect(try LimitValue.rate("2MB/s") == 16_000_000)
        #expect(try LimitValue.rate("1.5gbit") == 1_500_000_000)
        #expect(try LimitValue.perSecond("50/s") == 50)
        #expect(try LimitValue.perSecond("3000/min") == 50)
        #expect(try LimitValue.perSecond("7") == 7)
        #expect(try LimitValue.bytes("20MiB") == 20 << 20)
        #expect(try LimitValue.count("512") == 512)
        for bad in ["5", "5 furlongs", "-1Mbit", "1kbit", "200Gbit"] { #expect(throws: ValueError.self) { try LimitValue.rate(bad) } }
        for bad in ["0", "x/s", "5/h"] { #expect(throws: ValueError.self) { try LimitValue.perSecond(bad) } }
        for bad in ["0", "-3", "1.5", "99999999999"] { #expect(throws: ValueError.self) { try LimitValue.count(bad) } }
        #expect(throws: ValueError.self) { var l = LimitSettings(); try l.set("Quota", "lots") }
        #expect(throws: ValueError.self) { var l = LimitSettings(); try l.set("Colour", "red") }
        #expect(LimitValue.formatRate(5_000_000) == "5 Mbit/s" && LimitValue.formatRate(1_500_000) == "1.5 Mbit/s")
    }

    @Test func summaryAndQuotaText() throws {
        let l = PeerLimits(sessionMs: 1_800_000, pauseMs: 84_600_000, quotaBytes: 1 << 30, rateUpBitsPerSecond: 5_000_000,
                           rateDownBitsPerSecond: 5_000_000, idleTimeoutMs: 600_000, maxFlows: 512, newFlowsPerSecond: 50)
        #expect(l.summary == "session 30m then pause 23h30m, quota 1GiB, rate 5 Mbit/s each way, idle 10m, 512 flows, 50 new flows/s")
        #expect(l.quotaText(ByteUse(up: 100 << 20, down: 212 << 20)) == "312.0 MiB of 1GiB used")
        let split = PeerLimits(quotaUpBytes: 10 << 20, quotaDownBytes: 1 << 30)
        #expect(split.quotaText(ByteUse(up: 9 << 20, down: 1 << 20)) == "9.0 MiB of 10MiB up used", "the tightest quota is shown")
        #expect(PeerLimits.unlimited.summary == "no limits" && PeerLimits.unlimited.quotaText(.zero) == nil)
    }

    @Test func tierNames() {
        for good in ["free", "premium", "trial", "gold-2", "a_b"] { #expect(PeerTier(rawValue: good) != nil, "\(good)") }
        for bad in ["", "Gold", "9lives", "a b", String(repeating: "x", count: 33), "tier!"] { #expect(PeerTier(rawValue: bad) == nil, "\(bad)") }
    }
}
