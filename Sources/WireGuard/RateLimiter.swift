// Per-source handshake rate limit, applied under load (wireguard-go ratelimiter, kernel ratelimiter.c).
import Core
import Packet

/// A token bucket per source address: 20 handshake messages per second with a burst of 5, keyed by
/// the IPv4 address or the IPv6 /64. Entries idle for a second are forgotten; the table is bounded,
/// and a full table refuses new sources (fail closed while under attack).
struct RateLimiter {
    static let packetsPerSecond: UInt64 = 20
    static let burst: UInt64 = 5
    static let packetCost: UInt64 = WireGuardProtocol.second / packetsPerSecond
    static let maxTokens: UInt64 = packetCost * burst
    static let maxEntries = 16_384

    private struct Bucket {
        var tokens: UInt64
        var last: UInt64
    }

    private struct Key: Hashable {
        let high: UInt64
        let low: UInt64
        let v6: Bool
    }

    private var buckets: [Key: Bucket] = [:]
    private var lastSweep: UInt64 = 0

    /// True when a handshake message from `address` may be processed at `now`.
    mutating func allow(_ address: IPAddress, now: UInt64) -> Bool {
        if now &- lastSweep >= WireGuardProtocol.second {
            buckets = buckets.filter { now &- $0.value.last < WireGuardProtocol.second }
            lastSweep = now
        }
        let key = address.isIPv6 ? Key(high: address.high, low: 0, v6: true) : Key(high: 0, low: address.low, v6: false)
        guard var b = buckets[key] else {
            guard buckets.count < Self.maxEntries else { return false }
            buckets[key] = Bucket(tokens: Self.maxTokens - Self.packetCost, last: now)
            return true
        }
        b.tokens = min(Self.maxTokens, b.tokens + (now &- b.last))
        b.last = now
        defer { buckets[key] = b }
        guard b.tokens >= Self.packetCost else { return false }
        b.tokens -= Self.packetCost
        return true
    }
}
