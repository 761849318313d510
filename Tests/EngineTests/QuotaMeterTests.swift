import Core
@testable import Engine
import Testing
import WireGuard

/// The data path's byte accounting (issue 16): a quota crossed inside a batch stops the peer
/// after the packet that crossed it, counts are charged once per run, other peers are untouched.
@Suite struct QuotaMeterTests {
    let alice = PeerHandle(rawValue: 1), bob = PeerHandle(rawValue: 2)

    @Test func aQuotaCrossedInsideABatchStopsAfterThePacketThatCrossedIt() {
        let meter = QuotaMeter()
        meter.arm(alice, window: 100, used: ByteUse(up: 0, down: 0), limits: PeerLimits(sessionMs: 1, quotaBytes: 10_000))
        var run = QuotaRun(up: true)
        let snap = meter.current
        var forwarded = 0
        for _ in 0..<20 where run.admit(peer: 1, bytes: 1_400, in: snap, meter: meter) { forwarded += 1 }
        // 7 packets are 9,800 bytes (under); the 8th crosses (11,200) and is the last one.
        #expect(forwarded == 8)
        // Bob has no account: never refused, never counted.
        for _ in 0..<5 { let admitted1 = run.admit(peer: 2, bytes: 1_400, in: snap, meter: meter); #expect(admitted1) }
        run.flush(meter)
        let a = meter.account(alice)!
        #expect(a.used == ByteUse(up: 11_200, down: 0) && a.isExhausted)
        #expect(meter.takeWake() && !meter.takeWake(), "the watchdog is woken once")
        // The next batch refuses at once (the account says exhausted).
        var next = QuotaRun(up: false)
        let admitted2 = next.admit(peer: 1, bytes: 60, in: meter.current, meter: meter); #expect(!admitted2)
    }

    @Test func bothDirectionsShareTheTotalAndCountsSurviveReArming() {
        let meter = QuotaMeter()
        let l = PeerLimits(sessionMs: 1, quotaBytes: 5_000, quotaUpBytes: 1_000)
        meter.arm(alice, window: 7, used: ByteUse(up: 500, down: 1_000), limits: l)
        var up = QuotaRun(up: true), down = QuotaRun(up: false)
        let admitted3 = up.admit(peer: 1, bytes: 400, in: meter.current, meter: meter); #expect(admitted3)
        let admitted4 = up.admit(peer: 1, bytes: 400, in: meter.current, meter: meter); #expect(admitted4, "the crossing packet passes")
        let admitted5 = up.admit(peer: 1, bytes: 10, in: meter.current, meter: meter); #expect(!admitted5, "QuotaUp 1000 reached")
        up.flush(meter)
        #expect(meter.account(alice)?.used == ByteUse(up: 1_300, down: 1_000))
        // Arming the same window again keeps what was counted (a tick, a reload).
        meter.arm(alice, window: 7, used: .zero, limits: l)
        #expect(meter.account(alice)?.used == ByteUse(up: 1_300, down: 1_000))
        // A new window starts from what the watchdog says (a fresh window: zero).
        meter.arm(alice, window: 8, used: .zero, limits: l)
        #expect(meter.account(alice)?.used == .zero && meter.account(alice)?.isExhausted == false)
        let admitted6 = down.admit(peer: 1, bytes: 3_000, in: meter.current, meter: meter); #expect(admitted6)
        down.flush(meter)
        meter.disarm(alice)
        #expect(meter.account(alice) == nil && meter.current.isEmpty)
    }

    @Test func aWindowStoredUsedUpIsExhaustedAtArm() {
        let meter = QuotaMeter()
        meter.arm(bob, window: 1, used: ByteUse(up: 0, down: 20 << 20), limits: PeerLimits(quotaDownBytes: 20 << 20))
        var run = QuotaRun(up: false)
        let admitted7 = run.admit(peer: 2, bytes: 1, in: meter.current, meter: meter); #expect(!admitted7)
    }
}
