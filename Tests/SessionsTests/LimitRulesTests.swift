import Core
import Sessions
import Testing

/// The window rules under limits (issue 16): quota crossing, an early end and its pause, a
/// window with no time limit, idleness exactly at the boundary.
@Suite struct LimitRulesTests {
    static let tiers = TierClasses(freeSessionMs: 20_000, freePauseMs: 30_000)
    static let cfg = WatchdogConfig(idleMs: 180_000, intervalMs: 1_000)

    @Test func quotaReachedAtExactlyTheQuota() {
        let l = PeerLimits(sessionMs: 60_000, pauseMs: 30_000, quotaBytes: 1000, quotaUpBytes: 300)
        #expect(!WatchdogRules.quotaReached(up: 299, down: 700, limits: l))
        #expect(WatchdogRules.quotaReached(up: 300, down: 0, limits: l), "QuotaUp reached")
        #expect(WatchdogRules.quotaReached(up: 200, down: 800, limits: l), "Quota (both ways) reached at exactly 1000")
        #expect(!WatchdogRules.quotaReached(up: .max / 2, down: 0, limits: .unlimited))
        let left = WatchdogRules.quotaLeft(up: 100, down: 500, limits: l)
        #expect(left.up == 200 && left.down == 400)
        let none = WatchdogRules.quotaLeft(up: 100, down: 500, limits: PeerLimits(quotaDownBytes: 600))
        #expect(none.up == nil && none.down == 100)
    }

    @Test func aQuotaEndsTheWindowNowAndItsPauseStartsNow() {
        let l = PeerLimits(sessionMs: 60_000, pauseMs: 30_000, quotaBytes: 1000)
        let w = WatchdogRules.newWindow(now: 1_000, limits: l)
        #expect(w == WindowDates(allowedUntil: 61_000, reconnectAt: 91_000))
        let ended = WatchdogRules.endedEarly(w, now: 5_000, limits: l)
        #expect(ended == WindowDates(allowedUntil: 5_000, reconnectAt: 35_000))
        #expect(WatchdogRules.phase(now: 5_000, limits: l, window: ended) == .paused(ended))
        #expect(WatchdogRules.endedEarly(ended, now: 6_000, limits: l) == ended, "an ended window is not moved again")
        // A reconnect during the pause is refused; after it, a fresh window (and a fresh quota).
        #expect(WatchdogRules.onConnect(now: 34_999, limits: l, window: ended) == .refuse(ended))
        #expect(WatchdogRules.onConnect(now: 35_000, limits: l, window: ended) == .openWindow(WindowDates(allowedUntil: 95_000, reconnectAt: 125_000)))
    }

    /// The pause names what ended its window: the quota when the window's use reached one, else
    /// its Session time (refusal rows, `explain PEER` and journal events all take this wording).
    @Test func thePauseNamesTheLimitThatEndedItsWindow() {
        let l = PeerLimits(sessionMs: 60_000, pauseMs: 30_000, quotaBytes: 1000, quotaDownBytes: 600)
        #expect(WatchdogRules.pauseReason(used: ByteUse(up: 100, down: 499), limits: l) == .sessionTime)
        #expect(WatchdogRules.pauseReason(used: ByteUse(up: 400, down: 600), limits: l) == .quota)
        #expect(WatchdogRules.pauseReason(used: ByteUse(up: 0, down: 600), limits: l) == .quota, "QuotaDown alone")
        #expect(WatchdogRules.pauseReason(used: ByteUse(up: .max / 2, down: 0), limits: PeerLimits(sessionMs: 1, pauseMs: 1)) == .sessionTime,
                "no quota: time ended it, whatever was used")
        #expect(WatchdogRules.PauseReason.quota.text == "quota pause")
        #expect(WatchdogRules.PauseReason.sessionTime.text == "free-limit pause")
        #expect(WatchdogRules.PauseReason.quota.eventReason == "quota-pause")
        #expect(WatchdogRules.PauseReason.sessionTime.eventReason == "free-pause")
    }

    @Test func aQuotaOnlyWindowHasNoEnd() {
        let l = PeerLimits(pauseMs: 3_600_000, quotaBytes: 20 << 20)
        #expect(l.isWindowed)
        let w = WatchdogRules.newWindow(now: 1_000, limits: l)
        #expect(w.isOpenEnded)
        #expect(WatchdogRules.phase(now: 1_000 + 86_400_000 * 365, limits: l, window: w) == .inWindow(w))
        let ended = WatchdogRules.endedEarly(w, now: 2_000, limits: l)
        #expect(ended == WindowDates(allowedUntil: 2_000, reconnectAt: 3_602_000) && !ended.isOpenEnded)
    }

    @Test func idleExactlyAtTheBoundary() {
        let l = PeerLimits(idleTimeoutMs: 5_000)
        // Measured on traffic: handshakes alone (keepalives do not count) do not keep it busy.
        #expect(!WatchdogRules.idle(now: 14_999, lastHandshake: 14_000, lastTraffic: 10_000, limits: l, config: Self.cfg))
        #expect(WatchdogRules.idle(now: 15_000, lastHandshake: 14_000, lastTraffic: 10_000, limits: l, config: Self.cfg))
        #expect(!WatchdogRules.idle(now: 15_000, lastHandshake: 14_000, lastTraffic: 10_001, limits: l, config: Self.cfg))
        // Without IdleTimeout only the handshake rule (180 s) applies.
        #expect(!WatchdogRules.idle(now: 100_000, lastHandshake: 14_000, lastTraffic: 0, limits: .unlimited, config: Self.cfg))
        #expect(WatchdogRules.idle(now: 194_000, lastHandshake: 14_000, lastTraffic: 193_000, limits: l, config: Self.cfg))
        let d = WatchdogRules.onTick(now: 15_000, limits: l, window: nil, sessionLastHandshake: 14_000, lastTraffic: 10_000, config: Self.cfg)
        #expect(d.endSession == .idle && !d.refuse)
        let busy = WatchdogRules.onTick(now: 15_000, limits: l, window: nil, sessionLastHandshake: 14_000, lastTraffic: 14_500, config: Self.cfg)
        #expect(busy.endSession == nil)
    }
}
