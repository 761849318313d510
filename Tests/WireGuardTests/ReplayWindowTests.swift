// The replay window: edge cases and a random comparison with a slow reference.
import Core
import Testing
@testable import WireGuard

/// `ReplayWindow` is noncopyable, so expectations go through this helper.
func acc(_ w: inout ReplayWindow, _ counter: UInt64) -> Bool {
    w.accept(counter, limit: WireGuardProtocol.rejectAfterMessages)
}

struct ReplayWindowTests {
    let limit = WireGuardProtocol.rejectAfterMessages
    let window = ReplayWindow.windowSize

    @Test func windowIsAtLeast2048() { #expect(window >= 2048 && window == 8128) }

    @Test func duplicatesAndOrder() {
        var w = ReplayWindow()
        #expect(acc(&w, 0))
        #expect(!acc(&w, 0))
        #expect(acc(&w, 5))
        #expect(acc(&w, 3))
        #expect(!acc(&w, 3))
        #expect(acc(&w, 4))
        #expect(!acc(&w, 5))
    }

    @Test func boundaryOfWindow() {
        var w = ReplayWindow()
        let top: UInt64 = 100_000
        #expect(acc(&w, top))
        #expect(acc(&w, top - 2048))  // 2048 behind: inside
        #expect(!acc(&w, top - window - 1))  // just outside
        let would = w.wouldAccept(top - window, limit: limit)
        #expect(would)
        #expect(acc(&w, top - window))  // the oldest still inside
        #expect(!acc(&w, top - window))
    }

    @Test func farFutureJumpClearsEverything() {
        var w = ReplayWindow()
        for c: UInt64 in 0..<300 { #expect(acc(&w, c)) }
        let far: UInt64 = 1 << 40
        #expect(acc(&w, far))
        #expect(!acc(&w, 299))  // now far too old
        #expect(acc(&w, far - 1))  // bits were cleared, not inherited
        #expect(acc(&w, far - 64 * 5 - 3))
        #expect(!acc(&w, far))
    }

    @Test func limitIsExclusive() {
        var w = ReplayWindow()
        #expect(!acc(&w, limit))
        #expect(acc(&w, limit - 1))
        #expect(!acc(&w, UInt64.max))
    }

    @Test func rejectedCountersChangeNothing() {
        var w = ReplayWindow()
        #expect(acc(&w, 10_000))
        #expect(!acc(&w, 10))
        let last = w.last
        #expect(last == 10_000)
        #expect(acc(&w, 9_999))
    }

    /// Random walks against a set-based reference with the same window rule.
    @Test(arguments: [1, 2, 3, 4])
    func matchesSlowReference(seed: UInt64) {
        let rng = TestRandom(seed: seed)
        var w = ReplayWindow()
        var seen = Set<UInt64>()
        var last: UInt64 = 0
        var cursor: UInt64 = 0
        for _ in 0..<20_000 {
            let r = rng.uniform(100)
            let c: UInt64
            switch r {
            case 0..<60: c = cursor + UInt64(rng.uniform(4))
            case 60..<85: c = cursor >= 9000 ? cursor - UInt64(rng.uniform(9000)) : UInt64(rng.uniform(UInt32(cursor + 1)))
            case 85..<95: c = cursor + UInt64(rng.uniform(20_000))
            default: c = cursor >= window ? cursor - window + UInt64(rng.uniform(3)) - 1 : cursor
            }
            let expected = (c > last || last - c <= window) && !seen.contains(c)
            let got = acc(&w, c)
            #expect(got == expected, "counter \(c) last \(last)")
            if got {
                seen.insert(c)
                if c > last { last = c }
            }
            cursor = max(cursor, c)
        }
    }
}
