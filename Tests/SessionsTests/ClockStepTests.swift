import Core
import Sessions
import Testing

/// The case table of docs/session.md ("Clock steps", "Across a restart"), row by row, on the pure
/// rules: a free peer that wants to be connected all the time (it handshakes every 200 ms while
/// it is not), a watchdog that ticks every second, and a wall clock that steps. Each test counts
/// the *real* milliseconds the peer was granted per window and the real length of each pause.
@Suite struct ClockStepTests {
    static let session: Int64 = 20_000
    static let pause: Int64 = 40_000
    static let interval: Int64 = 1_000
    static let tiers = TierClasses(freeSessionMs: session, freePauseMs: pause)
    static let cfg = WatchdogConfig(idleMs: 180_000, intervalMs: interval)
    static let hour: Int64 = 3_600_000
    static let year: Int64 = 365 * 86_400_000

    /// One daemon run of the rules. `boot` is real time (CLOCK_BOOTTIME, ms); the wall clock is
    /// `boot + wallOffset` and steps when the test changes `wallOffset`.
    struct Run {
        var boot: Int64
        var wallOffset: Int64
        var clock: WatchdogClock
        var window: WindowDates?
        var lastHandshake: Int64?  // watchdog time of the live session's last handshake; nil: not connected
        var nextTick: Int64
        /// Real ms connected in the window that is open (by the window's opening).
        var connectedMs: [Int64] = []
        /// Real boot times at which each window opened, and each pause began.
        var opened: [Int64] = []
        var pausedAt: [Int64] = []
        var steps: [Int64] = []

        var wall: Int64 { boot &+ wallOffset }

        init(wall: Int64, boot: Int64 = 5_000, window: WindowDates? = nil) {
            self.boot = boot
            wallOffset = wall &- boot
            clock = WatchdogClock(wallMs: wall, bootMs: boot)
            self.window = window
            nextTick = boot
        }

        /// Runs until real time `end`, in 200 ms steps (the pings of the e2e test).
        mutating func run(until end: Int64) {
            while boot < end {
                if boot >= nextTick {
                    // The ticker: sync with the wall clock first (a step moves every date), then tick.
                    if let step = clock.sync(wallMs: wall, bootMs: boot) {
                        steps.append(step)
                        window = window?.shifted(by: step)
                        lastHandshake = lastHandshake.map { $0 &+ step }
                    }
                    let now = clock.now(bootMs: boot)
                    let d = WatchdogRules.onTick(now: now, tier: .free, window: window, sessionLastHandshake: lastHandshake,
                                                 tiers: tiers, config: cfg)
                    if let w = d.openWindow { window = w; opened.append(boot); connectedMs.append(0) }
                    if d.endSession != nil { lastHandshake = nil; pausedAt.append(boot) }
                    nextTick = boot + interval
                }
                let now = clock.now(bootMs: boot)
                if lastHandshake == nil {
                    // Checked at arrival (admission before the response), not at the next tick.
                    switch WatchdogRules.onConnect(now: now, tier: .free, window: window, tiers: tiers) {
                    case .openWindow(let w):
                        window = w
                        opened.append(boot)
                        connectedMs.append(0)
                        lastHandshake = now
                    case .resume:
                        lastHandshake = now
                    case .admitUnlimited:
                        Issue.record("free peer admitted unlimited")
                    case .refuse:
                        break
                    }
                }
                boot += 200
                if lastHandshake != nil, !connectedMs.isEmpty { connectedMs[connectedMs.count - 1] += 200 }
            }
        }

        /// Real length of each complete pause: from a session's end to the next window's opening.
        var pauses: [Int64] {
            pausedAt.compactMap { p in opened.first { $0 > p }.map { $0 - p } }
        }
    }

    /// The bar of the e2e test: connected time per window ≤ FreeSession + WatchdogInterval (+ one
    /// ping step), and every pause at least FreePause of real time.
    static func expectHeld(_ r: Run, windows: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(r.connectedMs.count >= windows, "windows opened: \(r.connectedMs)", sourceLocation: sourceLocation)
        for ms in r.connectedMs {
            #expect(ms <= session + interval + 200, "connected \(ms) ms in one window: \(r.connectedMs)", sourceLocation: sourceLocation)
        }
        // Every complete window granted at least FreeSession minus one tick (no window cut short).
        for ms in r.connectedMs.dropLast() {
            #expect(ms >= session - interval, "a window cut short: \(r.connectedMs)", sourceLocation: sourceLocation)
        }
        for p in r.pauses {
            #expect(p >= pause - 200, "pause of \(p) ms (< FreePause): \(r.pauses)", sourceLocation: sourceLocation)
        }
    }

    static let t0: Int64 = 1_800_000_000_000

    /// Rows "wall clock steps back/forward during the window" and "… during the pause": steps of
    /// seconds, hours and years, in both directions, at points inside the window and the pause.
    @Test(arguments: [
        Int64(-1_500), 1_500, -hour, hour, -10 * year, 10 * year, -3 * hour, 30 * year,
    ], [Int64(3_000), 19_000, 25_000, 59_000])
    func stepDuringAWindowOrPause(step: Int64, at offset: Int64) {
        var r = Run(wall: Self.t0)
        let start = r.boot
        r.run(until: start + offset)
        r.wallOffset += step
        r.run(until: start + 3 * (Self.session + Self.pause))
        #expect(r.steps == [step], "the step is seen once: \(r.steps)")
        Self.expectHeld(r, windows: 3)
    }

    /// Row "a step exactly at a boundary": at `allowed_until` and at `reconnect_at` (in real time),
    /// back and forward, by an hour.
    @Test(arguments: [-hour, hour], [session, session + pause])
    func stepAtABoundary(step: Int64, at offset: Int64) {
        var r = Run(wall: Self.t0)
        let start = r.boot
        r.run(until: start + offset)
        r.wallOffset += step
        r.run(until: start + 3 * (Self.session + Self.pause))
        Self.expectHeld(r, windows: 3)
    }

    /// The measured failure of the issue: back 1 h during the pause let the peer in 3 s later.
    @Test func backAnHourInThePauseKeepsThePause() {
        var r = Run(wall: Self.t0)
        r.run(until: r.boot + 30_000)  // 10 s into the pause
        #expect(r.connectedMs == [Self.session])
        r.wallOffset -= Self.hour
        r.run(until: r.boot + 29_000)  // the pause has 30 s left: still paused 29 s later
        #expect(r.connectedMs == [Self.session], "let in during the pause")
        r.run(until: r.boot + 2_000)
        #expect(r.connectedMs.count == 2, "a new window once the pause really ended")
    }

    /// The other measured failure: forward 1 h must not skip the pause nor open a window dated in
    /// the "future" that lasts an hour once the clock is put right.
    @Test func forwardThenBackIsNeverMoreThanOneSession() {
        var r = Run(wall: Self.t0)
        r.run(until: r.boot + 25_000)       // in the pause
        r.wallOffset += Self.hour             // NTP's first correction, or a wrong clock
        r.run(until: r.boot + 10_000)
        #expect(r.connectedMs == [Self.session], "the pause was skipped")
        r.wallOffset -= Self.hour             // put right again
        r.run(until: r.boot + 150_000)
        Self.expectHeld(r, windows: 3)
    }

    // MARK: across a restart

    /// A restart: the daemon ran until now (its last heartbeat is the watchdog's time then) and
    /// starts again, with a boot clock from zero, when the wall clock reads `wallAtStart`.
    static func restart(from r: Run, wallAtStart: Int64) -> (Run, StartClock) {
        let heartbeat = r.clock.now(bootMs: r.boot)
        let start = StartClock.at(wallMs: wallAtStart, heartbeatMs: heartbeat)
        return (Run(wall: wallAtStart, boot: 1_000, window: r.window?.shifted(by: start.shiftMs)), start)
    }

    /// Row "restart, wall clock behind the last heartbeat": down in the window and in the pause.
    /// The peer gets exactly what it had left at the heartbeat, never more; the pause left at the
    /// heartbeat is served in full (the downtime does not shorten it).
    @Test(arguments: [Int64(-1_000), -hour, -10 * year], [Int64(8_000), 30_000])
    func restartWithTheClockBehind(behind: Int64, downAt offset: Int64) {
        var r = Run(wall: Self.t0)
        r.run(until: r.boot + offset)
        let now = r.clock.now(bootMs: r.boot)
        let windowLeft = max(0, r.window!.allowedUntil - now)
        let pauseLeft = r.window!.reconnectAt - max(r.window!.allowedUntil, now)
        var (next, start) = Self.restart(from: r, wallAtStart: now + behind)
        #expect(start == .behind(-behind))
        let begin = next.boot
        next.run(until: begin + windowLeft + pauseLeft - 400)
        #expect(next.opened.isEmpty, "a fresh window before the pause left at the heartbeat ran out")
        // The resumed window granted at most what was left at the heartbeat.
        #expect(next.pausedAt.count == (windowLeft > 0 ? 1 : 0))
        if let end = next.pausedAt.first { #expect(end - begin <= windowLeft + Self.interval + 200) }
        next.run(until: begin + windowLeft + pauseLeft + Self.interval + 400)
        #expect(next.opened.count == 1, "a window once that pause ran out")
    }

    /// Rows "restart, wall clock at or ahead of the heartbeat": the downtime counts as real time
    /// (a restart during the pause waits out the rest of it); more than a day ahead is flagged.
    @Test func restartWithTheClockAhead() {
        var r = Run(wall: Self.t0)
        r.run(until: r.boot + 30_000)  // 10 s into the pause
        let heartbeat = r.clock.now(bootMs: r.boot)
        var (next, start) = Self.restart(from: r, wallAtStart: heartbeat + 12_000)
        #expect(start == .trusted)
        next.run(until: next.boot + 17_800)   // 40 − 10 − 12 = 18 s of pause left
        #expect(next.opened.isEmpty)
        next.run(until: next.boot + 600)
        #expect(next.opened.count == 1)
        #expect(StartClock.at(wallMs: heartbeat + 2 * 86_400_000, heartbeatMs: heartbeat) == .farAhead(2 * 86_400_000))
        #expect(StartClock.at(wallMs: heartbeat + 86_400_000, heartbeatMs: heartbeat) == .trusted)
        #expect(StartClock.at(wallMs: heartbeat, heartbeatMs: nil) == .trusted)
        #expect(StartClock.at(wallMs: heartbeat, heartbeatMs: heartbeat) == .trusted)
    }

    /// `WatchdogClock` itself: never steps between syncs, follows a step once, ignores jitter.
    @Test func watchdogClockFollowsStepsOnly() {
        var c = WatchdogClock(wallMs: 1_000_000, bootMs: 10)
        #expect(c.now(bootMs: 510) == 1_000_500)
        #expect(c.sync(wallMs: 1_000_900, bootMs: 510) == nil, "400 ms of jitter is not a step")
        #expect(c.now(bootMs: 510) == 1_000_500)
        #expect(c.sync(wallMs: 1_000_500 - 3_600_000, bootMs: 510) == -3_600_000)
        #expect(c.now(bootMs: 1_510) == 1_001_500 - 3_600_000)
        #expect(c.sync(wallMs: 1_001_500 - 3_600_000, bootMs: 1_510) == nil)
    }
}
