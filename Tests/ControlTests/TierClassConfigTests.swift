import Core
import Testing
@testable import Config

/// `[Tier NAME]` sections and per-peer limit keys (issue 16) as the config parser reads them.
@Suite struct TierClassConfigTests {
    @Test func tierSectionsAndPeerOverrides() throws {
        let c = try parse(minimalInterface + """
            FreeSession = 20m
            [Tier trial]
            Session = 30m
            Pause = 23h30m
            Quota = 1GiB
            Rate = 5Mbit
            IdleTimeout = 10m
            MaxFlows = 512
            NewFlowRate = 50/s
            [Peer]
            Name = alice
            PublicKey = \(k2)
            Tier = trial
            Quota = none
            RateDown = 10Mbit
            [Peer]
            Name = bob
            PublicKey = \(k3)

            """)
        let alice = try #require(c.peer(named: "alice"))
        let l = c.limits(of: alice)
        #expect(l.sessionMs == 1_800_000 && l.pauseMs == 84_600_000 && l.quotaBytes == nil)
        #expect(l.rateUpBitsPerSecond == 5_000_000 && l.rateDownBitsPerSecond == 10_000_000)
        #expect(l.idleTimeoutMs == 600_000 && l.maxFlows == 512 && l.newFlowsPerSecond == 50)
        let bob = try #require(c.peer(named: "bob"))
        #expect(c.limits(of: bob) == PeerLimits(sessionMs: 1_200_000, pauseMs: 2_700_000), "free: FreeSession then FreePause")
        #expect(c.limits(of: bob, tier: PeerTier(rawValue: "trial")!).quotaBytes == 1 << 30, "a tier override resolves too")
        #expect(c.tiers.names.map(\.rawValue) == ["free", "premium", "trial"])
    }

    @Test func errorsSayWhereAndWhat() {
        #expect(errors(minimalInterface + "[Tier trial]\nQuota = lots\n").first?.hasPrefix("etc/tunneld.conf:5: Quota: 'lots' is not a size; write a size like 500MB") == true)
        #expect(errors(minimalInterface + "[Tier Gold]\n").first == "etc/tunneld.conf:4: '[Tier Gold]' is not a tier section; write [Tier NAME]; a tier name is 1-32 characters of a-z, 0-9, _ and -, starting with a letter")
        #expect(errors(minimalInterface + "[Tier t]\n[Tier t]\n").first == "etc/tunneld.conf:5: second [Tier t] section (the first is at line 4); merge them into one")
        #expect(errors(minimalInterface + "[Tier t]\nPublicKey = \(k2)\n").first == "etc/tunneld.conf:5: PublicKey: does not belong in [Tier t]; move it to the [Peer] section")
        #expect(errors(minimalInterface + "Quota = 1GiB\n").first == "etc/tunneld.conf:4: Quota: does not belong in [Interface]; move it to a [Peer] or [Tier NAME] section")
        #expect(errors(minimalPeer + "Tier = trail\n[Tier trial]\n").first == "etc/tunneld.conf:7: Tier: peer 'alice' is in tier 'trail', which is not configured; did you mean 'trial'? configured tiers: free, premium, trial; add a [Tier trail] section to define it")
    }
}
