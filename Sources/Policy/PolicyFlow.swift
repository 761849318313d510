import Core
import Packet

/// A hypothetical flow in the FLOW syntax of docs/policy.md, as `tunnelctl policy test` and
/// `tunnelctl explain` take it:
///
///     PROTO SRC[:PORT] -> DST[:PORT] [peer NAME] [tier NAME] [host NAME] [in|out] [at YYYY-MM-DDTHH:MM]
///
/// IPv6 addresses go in brackets when a port follows (`[fd99::2]:443`). An omitted port is 0.
/// The direction defaults to `out`. `at` is local time; without it the caller supplies "now".
public struct PolicyFlow: Sendable, Hashable {
    public var proto: IPProtocol
    public var source: IPAddress
    public var sourcePort: UInt16
    public var destination: IPAddress
    public var destinationPort: UInt16
    public var peer: String?
    public var tier: PeerTier?
    public var host: String?
    public var direction: Direction
    /// Local minute of the week from `at`, or nil when the flow did not say.
    public var minuteOfWeek: Int?
    /// The `at` text as given.
    public var at: String?

    /// The usage line for error messages.
    public static let syntax = "PROTO SRC[:PORT] -> DST[:PORT] [peer NAME] [tier NAME] [host NAME] [in|out] [at YYYY-MM-DDTHH:MM]"

    /// Parses FLOW text; errors say which word is wrong and why.
    public init(parsing text: String) throws(PolicyFlowError) {
        let words = text.replacingAll("->", with: " -> ").split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard words.count >= 4 else {
            throw PolicyFlowError(message: "too short; a flow is \(PolicyFlow.syntax)")
        }
        let protoWord = words[0].lowercased()
        guard ["tcp", "udp", "icmp", "icmpv6"].contains(protoWord), let p = IPProtocol(name: protoWord) else {
            throw PolicyFlowError(message: "'\(words[0])' is not a protocol; use tcp, udp, icmp or icmpv6")
        }
        proto = p
        (source, sourcePort) = try PolicyFlow.endpoint(words[1], proto: p, role: "source")
        guard words[2] == "->" else {
            throw PolicyFlowError(message: "expected '->' after the source, found '\(words[2])'")
        }
        (destination, destinationPort) = try PolicyFlow.endpoint(words[3], proto: p, role: "destination")
        guard source.isIPv6 == destination.isIPv6 else {
            throw PolicyFlowError(message: "source and destination are of different address families")
        }
        if p == .icmp && source.isIPv6 { throw PolicyFlowError(message: "icmp is for IPv4; use icmpv6 with IPv6 addresses") }
        if p == .icmpv6 && !source.isIPv6 { throw PolicyFlowError(message: "icmpv6 is for IPv6; use icmp with IPv4 addresses") }
        direction = .out
        var i = 4
        var seen: Set<String> = []
        func value(_ key: String) throws(PolicyFlowError) -> String {
            guard i + 1 < words.count else { throw PolicyFlowError(message: "'\(key)' needs a value") }
            i += 2
            return words[i - 1]
        }
        while i < words.count {
            let key = words[i]
            let slot = key == "in" || key == "out" ? "direction" : key
            if seen.contains(slot) { throw PolicyFlowError(message: "'\(key)' given twice") }
            seen.insert(slot)
            switch key {
            case "peer":
                let v = try value(key)
                guard PolicyParser.isName(v) else { throw PolicyFlowError(message: "'\(v)' is not a peer name") }
                peer = v
            case "tier":
                let v = try value(key)
                guard let t = PeerTier(keyword: v) else { throw PolicyFlowError(message: "'\(v)' is not a tier name; \(PeerTier.nameRule)") }
                tier = t
            case "host":
                let v = try value(key)
                guard case .exact(let h)? = try? PolicyParser.parseHostPattern(PolicyToken(kind: .word, text: v, column: 1)) else {
                    throw PolicyFlowError(message: "'\(v)' is not a host name")
                }
                host = h
            case "in", "out":
                direction = key == "in" ? .in : .out
                i += 1
            case "at":
                let v = try value(key)
                guard let m = PolicyFlow.parseAt(v) else {
                    throw PolicyFlowError(message: "'\(v)' is not a local time; write YYYY-MM-DDTHH:MM, e.g. 2026-03-02T22:30")
                }
                minuteOfWeek = m
                at = v
            default:
                let hint = DidYouMean.suffix(key, ["peer", "tier", "host", "in", "out", "at"])
                throw PolicyFlowError(message: "unknown word '\(key)'\(hint); after the addresses come peer, tier, host, in|out, at")
            }
        }
    }

    static func endpoint(_ w: String, proto: IPProtocol, role: String) throws(PolicyFlowError) -> (IPAddress, UInt16) {
        var addrText = Substring(w)
        var portText: Substring? = nil
        if w.hasPrefix("[") {
            guard let close = w.firstIndex(of: "]") else { throw PolicyFlowError(message: "\(role) '\(w)': missing ']'") }
            addrText = w[w.index(after: w.startIndex)..<close]
            let rest = w[w.index(after: close)...]
            if !rest.isEmpty {
                guard rest.first == ":" else { throw PolicyFlowError(message: "\(role) '\(w)': expected ':PORT' after ']'") }
                portText = rest.dropFirst()
            }
        } else if w.filter({ $0 == ":" }).count == 1 {
            let colon = w.firstIndex(of: ":")!
            addrText = w[..<colon]
            portText = w[w.index(after: colon)...]
        }
        guard let a = IPAddress(addrText) else {
            throw PolicyFlowError(message: "\(role) '\(addrText)' is not an IPv4 or IPv6 address (IPv6 with a port goes in brackets: [fd99::2]:443)")
        }
        guard let pt = portText else { return (a, 0) }
        guard proto.hasPorts else { throw PolicyFlowError(message: "\(proto) has no ports; drop ':\(pt)'") }
        guard !pt.isEmpty, pt.count <= 5, pt.allSatisfy({ $0.isASCII && $0.isNumber }), let v = Int(pt), v <= 65535 else {
            throw PolicyFlowError(message: "\(role) port '\(pt)' is not a port (0-65535)")
        }
        return (a, UInt16(v))
    }

    /// `YYYY-MM-DDTHH:MM` → local minute of week.
    static func parseAt(_ s: String) -> Int? {
        let b = Array(s.utf8)
        guard b.count == 16, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"), b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: " "),
            b[13] == UInt8(ascii: ":")
        else { return nil }
        func num(_ r: Range<Int>) -> Int? {
            var v = 0
            for i in r {
                guard b[i] >= 0x30 && b[i] <= 0x39 else { return nil }
                v = v * 10 + Int(b[i] - 0x30)
            }
            return v
        }
        guard let y = num(0..<4), let mo = num(5..<7), let d = num(8..<10), let h = num(11..<13), let mi = num(14..<16) else { return nil }
        return PolicyClock.minuteOfWeek(year: y, month: mo, day: d, hour: h, minute: mi)
    }

    /// The data-path query for this flow under `policy`, at `minuteOfWeek` unless the flow has `at`.
    public func query(for policy: CompiledPolicy, minuteOfWeek now: Int) -> PolicyQuery {
        PolicyQuery(
            direction: direction, proto: proto, source: source, destination: destination, sourcePort: sourcePort,
            destinationPort: destinationPort, peer: peer.map(policy.peerID(named:)) ?? .unknown, tier: tier, host: host,
            minuteOfWeek: minuteOfWeek ?? now)
    }

    /// The flow written back in FLOW syntax (canonical addresses; ports only for TCP/UDP).
    public var description: String {
        func ep(_ a: IPAddress, _ p: UInt16) -> String {
            guard proto.hasPorts else { return a.description }
            return a.isIPv6 ? "[\(a)]:\(p)" : "\(a):\(p)"
        }
        var s = "\(proto) \(ep(source, sourcePort)) -> \(ep(destination, destinationPort))"
        if let peer { s += " peer \(peer)" }
        if let tier { s += " tier \(tier)" }
        if let host { s += " host \(host)" }
        s += " \(direction)"
        if let at { s += " at \(at)" }
        return s
    }
}

/// A FLOW text that could not be read; the message says what and how to write it.
public struct PolicyFlowError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
