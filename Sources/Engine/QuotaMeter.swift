import Core
import Synchronization
import WireGuard

/// Per-peer byte accounting in the data path: for every peer with a byte quota or an
/// `IdleTimeout`, the bytes forwarded each way in its current window. The watchdog arms an
/// account when a window is in force (`arm`), reads it on every pass (quota reached, traffic for
/// idleness, the use to persist) and disarms it when the window ends.
///
/// The data path pays nothing for a peer without an account, and for the others counts per run
/// of one peer's packets in a batch (`QuotaRun`): one relaxed atomic add per run, not per packet.
/// Each account is written by one thread per direction (inbound: up, outbound: down).
public final class QuotaMeter: Sendable {
    /// One peer's window.
    public final class Account: Sendable {
        /// The window it counts (its `allowedUntil` when armed; 0 for an idle-only account).
        public let window: Int64
        /// Bytes the peer sent / received in the window (from the store at arm, plus what the
        /// data path counted since).
        let up: Atomic<UInt64>
        let down: Atomic<UInt64>
        /// Limits of the window (UInt64.max: none).
        let limitUp: UInt64, limitDown: UInt64, limitTotal: UInt64
        /// The limits themselves (their `quotaReached` is the one quota rule).
        let limits: PeerLimits
        /// Set by the data path when a quota is reached (it stops forwarding), read by the watchdog.
        let exhausted = Atomic<Bool>(false)

        init(window: Int64, used: ByteUse, limits: PeerLimits) {
            self.window = window
            up = Atomic(used.up)
            down = Atomic(used.down)
            limitUp = limits.quotaUpBytes ?? .max
            limitDown = limits.quotaDownBytes ?? .max
            limitTotal = limits.quotaBytes ?? .max
            self.limits = limits
        }

        /// Bytes used so far.
        public var used: ByteUse { ByteUse(up: up.load(ordering: .relaxed), down: down.load(ordering: .relaxed)) }

        /// True once the data path found a quota reached.
        public var isExhausted: Bool { exhausted.load(ordering: .relaxed) }

        /// What one direction may still carry.
        @inline(__always) func budget(up isUp: Bool) -> UInt64 {
            if exhausted.load(ordering: .relaxed) { return 0 }
            let u = up.load(ordering: .relaxed), d = down.load(ordering: .relaxed)
            let total = limitTotal == .max ? UInt64.max : (limitTotal > u &+ d ? limitTotal - (u &+ d) : 0)
            let own = isUp ? (limitUp == .max ? UInt64.max : (limitUp > u ? limitUp - u : 0))
                : (limitDown == .max ? UInt64.max : (limitDown > d ? limitDown - d : 0))
            return min(total, own)
        }

        /// Adds `bytes` one way; `reached`: the budget is used up.
        @inline(__always) func charge(_ bytes: UInt64, up isUp: Bool, reached: Bool) {
            if isUp { up.add(bytes, ordering: .relaxed) } else { down.add(bytes, ordering: .relaxed) }
            if reached { exhausted.store(true, ordering: .relaxed) }
        }
    }

    /// The accounts at one moment (immutable; the data path takes one per batch).
    public final class Snapshot: Sendable {
        let accounts: [UInt32: Account]
        /// No account at all: the data path skips accounting.
        public let isEmpty: Bool
        init(_ a: [UInt32: Account]) {
            accounts = a
            isEmpty = a.isEmpty
        }
        @inline(__always) func account(_ peer: UInt32) -> Account? { accounts[peer] }
    }

    private let state = Mutex(Snapshot([:]))
    /// Raised by the data path when an account becomes exhausted: the watchdog runs a pass at its
    /// next wake (≤ 1 s) instead of waiting for `WatchdogInterval`.
    let wake = Atomic<Bool>(false)

    public init() {}

    /// The accounts now.
    public var current: Snapshot { state.withLock { $0 } }

    /// The account of `peer`, if armed.
    public func account(_ peer: PeerHandle) -> Account? { current.account(peer.rawValue) }

    /// Arms (or keeps) `peer`'s account for the window `window` with `used` bytes already used.
    /// An account for the same window and limits is kept (its counts go on); returns it.
    @discardableResult
    public func arm(_ peer: PeerHandle, window: Int64, used: ByteUse, limits: PeerLimits) -> Account {
        state.withLock { s in
            if let a = s.accounts[peer.rawValue], a.window == window, a.limitUp == (limits.quotaUpBytes ?? .max),
                a.limitDown == (limits.quotaDownBytes ?? .max), a.limitTotal == (limits.quotaBytes ?? .max)
            {
                return a
            }
            let carried = s.accounts[peer.rawValue].flatMap { $0.window == window ? $0.used : nil } ?? used
            let a = Account(window: window, used: carried, limits: limits)
            if limits.quotaReached(carried) { a.exhausted.store(true, ordering: .relaxed) }
            var next = s.accounts
            next[peer.rawValue] = a
            s = Snapshot(next)
            return a
        }
    }

    /// Adds bytes other gateways counted in the same window (quota use summed across
    /// gateways) to `peer`'s account for `window`, if armed; the data path stops at the quota the
    /// sum reaches. Returns false when no such account is armed.
    @discardableResult
    public func credit(_ peer: PeerHandle, window: Int64, bytes: ByteUse) -> Bool {
        guard let a = account(peer), a.window == window else { return false }
        if bytes.up > 0 { a.up.add(bytes.up, ordering: .relaxed) }
        if bytes.down > 0 { a.down.add(bytes.down, ordering: .relaxed) }
        if a.limits.quotaReached(a.used) {
            a.exhausted.store(true, ordering: .relaxed)
            wake.store(true, ordering: .relaxed)
        }
        return true
    }

    /// Removes `peer`'s account (its window ended, or it has no quota any more).
    public func disarm(_ peer: PeerHandle) {
        state.withLock { s in
            guard s.accounts[peer.rawValue] != nil else { return }
            var next = s.accounts
            next[peer.rawValue] = nil
            s = Snapshot(next)
        }
    }

    /// True (once) when the data path exhausted an account since the last call.
    public func takeWake() -> Bool { wake.exchange(false, ordering: .relaxed) }

    /// Bytes of account state per armed peer (for the memory report).
    public static var bytesPerAccount: Int { MemoryLayout<Int64>.size * 5 + MemoryLayout<Bool>.size + MemoryLayout<PeerLimits>.size + 16 }
}

/// One data-path thread's accounting over a batch: consecutive packets of one peer are summed
/// locally and charged once when the peer changes or the batch ends (`flush`). A packet that
/// would go past the account's budget is the last one forwarded; the ones after it are refused.
struct QuotaRun {
    let up: Bool
    var peer: UInt32 = 0
    var account: QuotaMeter.Account?
    var pending: UInt64 = 0
    var budget: UInt64 = .max

    init(up: Bool) { self.up = up }

    /// Whether the packet of `bytes` from/to `peer` may be forwarded (and counts it).
    @inline(__always) mutating func admit(peer: UInt32, bytes: Int, in snapshot: QuotaMeter.Snapshot, meter: QuotaMeter) -> Bool {
        if peer != self.peer {
            flush(meter)
            self.peer = peer
            account = snapshot.account(peer)
            budget = account?.budget(up: up) ?? .max
        }
        guard account != nil else { return true }
        if pending >= budget { return false }
        pending &+= UInt64(bytes)
        return true
    }

    /// Charges what was summed and forgets the peer (end of batch).
    @inline(__always) mutating func flush(_ meter: QuotaMeter) {
        if let a = account, pending > 0 {
            let reached = pending >= budget
            a.charge(pending, up: up, reached: reached)
            if reached { meter.wake.store(true, ordering: .relaxed) }
        }
        pending = 0
        account = nil
        peer = 0
        budget = .max
    }
}
