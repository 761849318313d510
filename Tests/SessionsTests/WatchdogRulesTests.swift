import Core
import Sessions


import Testing

/// docs/session.md, rule by rule, on the pure core with injected times (ms).
@Suite struct WatchdogRulesTests {
    static let tiers = TierClasses(freeSessionMs: 900_000, freePauseMs: 2_700_000)
    static let cfg = WatchdogConfig(idleMs: 180_000, intervalMs: 5_000)
    static let t0: Int64 = 1_767_225_600_000
    static let w = WindowDates(allowedUntil: t0 + 900_000, reconnectAt: t0 + 3_600_000)

    // §6.2: connect opens a window when there is none or its pause ended; inside it never extends.
    @Test(arguments: [
        // (now offset from t0, tier, has window, expected)
        (Int64(0), PeerTier.free, false, ConnectDecision.openWindow(WindowDates(allowedUntil: t0 + 900_000, reconnectAt: t0 + 3_600_000))),
        (Int64(0), .free, true, .resume(w)),                    // window just opened: resume, same end
        (Int64(600_000), .free, true, .resume(w)),              // reconnect at minute 10: 5 minutes left, not 15
        (Int64(899_999), .free, true, .resume(w)),              // last millisecond of the window
        (Int64(900_000), .free, true, .refuse(w)),              // exactly allowed_until: paused
        (Int64(3_599_999), .free, true, .refuse(w)),            // last millisecond of the pause
        (Int64(3_600_000), .free, true,                         // exactly reconnect_at: a new window
         .openWindow(WindowDates(allowedUntil: t0 + 4_500_000, reconnectAt: t0 + 7_200_000))),
        (Int64(99_000_000), .free, true,
         .openWindow(WindowDates(allowedUntil: t0 + 99_900_000, reconnectAt: t0 + 102_600_000))),
        (Int64(0), .premium, false, .admitUnlimited),           // §6.5 premium: no window
        (Int64(1_000_000), .premium, true, .admitUnlimited),    // premium ignores a stale window
    ])
    func connect(_ offset: Int64, _ tier: PeerTier, _ hasWindow: Bool, _ want: ConnectDecision) {
        let got = WatchdogRules.onConnect(now: Self.t0 + offset, tier: tier, window: hasWindow ? Self.w : nil, tiers: Self.tiers)
        #expect(got == want)
    }

    // §6.3–4, §6.7: the tick refuses during the pause and ends sessions.
    @Test(arguments: [
        // (now offset, tier, has window, session last handshake offset or nil, refuse, end reason, opens window)
        (Int64(100_000), PeerTier.free, true, Int64?(0), false, SessionEndReason?.none, false),
        (Int64(899_999), .free, true, Int64?(800_000), false, nil, false),
        (Int64(900_000), .free, true, Int64?(800_000), true, .freeLimit, false),     // window ends: at once
        (Int64(900_000), .free, true, nil, true, nil, false),                         // pause without a session
        (Int64(3_599_999), .free, true, nil, true, nil, false),
        (Int64(3_600_000), .free, true, nil, false, nil, false),                      // pause over: un-refused
        (Int64(5_000_000), .free, true, Int64?(0), false, .freeLimit, false),         // clock jumped past window and pause
        (Int64(500_000), .free, true, Int64?(320_000), false, .idle, false),          // 180 s without handshake
        (Int64(500_000), .free, true, Int64?(320_001), false, nil, false),
        (Int64(500_000), .premium, true, Int64?(0), false, .idle, false),            // premium: only idle ends it
        (Int64(500_000), .premium, false, Int64?(400_000), false, nil, false),
        (Int64(500_000), .free, false, Int64?(400_000), false, nil, true),           // moved to free while connected
        (Int64(500_000), .free, false, nil, false, nil, false),                       // moved to free, not connected
    ])
    func tick(_ offset: Int64, _ tier: PeerTier, _ hasWindow: Bool, _ last: Int64?, _ refuse: Bool,
              _ end: SessionEndReason?, _ opens: Bool)
    {
        let now = Self.t0 + offset
        let d = WatchdogRules.onTick(now: now, tier: tier, window: hasWindow ? Self.w : nil,
                                     sessionLastHandshake: last.map { Self.t0 + $0 }, tiers: Self.tiers, config: Self.cfg)
        #expect(d.refuse == refuse)
        #expect(d.endSession == end)
        #expect(d.openWindow == (opens ? WatchdogRules.newWindow(now: now, tiers: Self.tiers) : nil))
    }

    // Backward clock step (documented in WatchdogRules): the stored end is kept, never extended,
    // and no fresh window is opened while the stored window or pause is in force.
    @Test func backwardStepNeverExtendsOrRenews() {
        for back in [Int64(1), 60_000, 900_000, 10_000_000] {
            let inWindow = Self.t0 + 600_000 - back
            if case .resume(let got) = WatchdogRules.onConnect(now: inWindow, tier: .free, window: Self.w, tiers: Self.tiers) {
                #expect(got.allowedUntil == Self.w.allowedUntil)
            } else {
                Issue.record("stepping back \(back) ms inside the window must resume it")
            }
            let inPause = Self.t0 + 2_000_000 - back
            let d = WatchdogRules.onConnect(now: inPause, tier: .free, window: Self.w, tiers: Self.tiers)
            switch d {
            case .resume(let got), .refuse(let got): #expect(got == Self.w)
            default: Issue.record("stepping back \(back) ms in the pause opened \(d)")
            }
        }
    }

    // §6.4 forward step / suspend: the wall clock decides, so a jump past the window ends it.
    @Test func forwardStepEndsTheWindow() {
        let d = WatchdogRules.onTick(now: Self.w.allowedUntil + 1, tier: .free, window: Self.w,
                                     sessionLastHandshake: Self.w.allowedUntil - 10_000, tiers: Self.tiers, config: Self.cfg)
        #expect(d.refuse && d.endSession == .freeLimit)
    }

    @Test func phasesAndSecondsLeft() {
        #expect(WatchdogRules.phase(now: Self.t0, tier: .premium, window: Self.w) == .unlimited)
        #expect(WatchdogRules.phase(now: Self.t0, tier: .free, window: nil) == .noWindow)
        #expect(WatchdogRules.phase(now: Self.w.reconnectAt, tier: .free, window: Self.w) == .pauseOver(Self.w))
        #expect(WatchdogRules.secondsLeft(now: 0, until: 1) == 1)
        #expect(WatchdogRules.secondsLeft(now: 0, until: 1000) == 1)
        #expect(WatchdogRules.secondsLeft(now: 0, until: 1001) == 2)
        #expect(WatchdogRules.secondsLeft(now: 5, until: 1) == 0)
    }

    @Test func resumeDetection() {
        #expect(TickReason.isResume(bootDeltaNs: 65_000_000_000, monotonicDeltaNs: 5_000_000_000))
        #expect(!TickReason.isResume(bootDeltaNs: 5_000_100_000, monotonicDeltaNs: 5_000_000_000))
        #expect(!TickReason.isResume(bootDeltaNs: 4_000_000_000, monotonicDeltaNs: 5_000_000_000))
    }
}
