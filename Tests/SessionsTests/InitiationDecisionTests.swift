import Core
import Sessions
import Testing

/// The admission decision on an authenticated initiation as a pure function of what the
/// watchdog holds in memory (`WatchdogRules.onInitiation`): no store, no device, no thread.
@Suite struct InitiationDecisionTests {
    static let t0: Int64 = 1_767_225_600_000
    static let free = TierClasses(freeSessionMs: 900_000, freePauseMs: 2_700_000).resolve(tier: .free)
    static let premium = TierClasses().resolve(tier: .premium)
    static let quota = PeerLimits(sessionMs: 900_000, pauseMs: 2_700_000, quotaBytes: 1_000)
    static let w = WindowDates(allowedUntil: t0 + 900_000, reconnectAt: t0 + 3_600_000)
    static let next = WindowDates(allowedUntil: t0 + 4_500_000, reconnectAt: t0 + 7_200_000)

    static func decide(_ offset: Int64, restriction: SessionEndReason? = nil, limits: PeerLimits = free,
                       window: WindowDates? = w, used: UInt64 = 0, live: Bool = false, openFirst: Bool = false) -> InitiationDecision
    {
        WatchdogRules.onInitiation(now: t0 + offset, restriction: restriction, limits: limits, window: window,
                                   used: ByteUse(up: used, down: 0), live: live, openFirst: openFirst)
    }

    @Test func restrictionsRefuseWhateverTheTierAndEndTheSession() {
        #expect(Self.decide(0, restriction: .disabled) == .refuse(.disabled, endSession: .disabled))
        #expect(Self.decide(0, restriction: .expired, limits: Self.premium, live: true) == .refuse(.expired, endSession: .expired))
    }

    @Test func inWindowAdmitsAndAPauseRefusesWithItsReason() {
        #expect(Self.decide(600_000) == .admit)                                      // resume, 5 minutes left
        #expect(Self.decide(900_000) == .refuse(.freePause, endSession: nil))        // exactly allowed_until
        #expect(Self.decide(3_599_999) == .refuse(.freePause, endSession: nil))
        #expect(Self.decide(1_000_000, limits: Self.quota, used: 1_000) == .refuse(.quotaPause, endSession: nil))
        #expect(Self.decide(3_600_000) == .admit)                                    // pause over: a window opens on completion
        #expect(Self.decide(0, window: nil) == .admit)
        #expect(Self.decide(1_000_000, limits: Self.premium) == .admit)              // premium ignores the window
    }

    @Test func aRekeyIsRefusedOnlyWhenItsWindowEnded() {
        #expect(Self.decide(899_999, live: true) == .admit)
        #expect(Self.decide(900_000, live: true) == .refuse(.freePause, endSession: .freeLimit))
    }

    /// A window that would open is opened first, off the handshake thread (the shared store
    /// asked, the row written); everything else is decided from memory at once.
    @Test func aWindowOpeningIsDoneFirstOffTheHandshakeThread() {
        #expect(Self.decide(0, window: nil, openFirst: true) == .openFirst(window: WindowDates(allowedUntil: Self.t0 + 900_000, reconnectAt: Self.t0 + 3_600_000)))
        #expect(Self.decide(3_600_000, openFirst: true) == .openFirst(window: Self.next))
        #expect(Self.decide(600_000, openFirst: true) == .admit)                        // a window in force: no question
        #expect(Self.decide(900_000, openFirst: true) == .refuse(.freePause, endSession: nil))
        #expect(Self.decide(0, limits: Self.premium, window: nil, openFirst: true) == .admit)
        #expect(Self.decide(0, restriction: .disabled, window: nil, openFirst: true) == .refuse(.disabled, endSession: .disabled))
        #expect(Self.decide(3_600_000, live: true, openFirst: true) == .admit)          // a live session opens nothing
    }
}
