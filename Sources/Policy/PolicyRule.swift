import Core
import Packet

/// One parsed rule line: an action and the match fields that must all hold (docs/policy.md).
/// An empty list means "any" for that field.
public struct PolicyRule: Sendable, Hashable {
    /// What the rule does when it matches.
    public var action: Verdict
    /// `out` unless the rule says `in`.
    public var direction: Direction = .out
    /// `peer NAME[,…]`; empty = any peer.
    public var peers: [String] = []
    /// The column of each name in `peers` (for diagnostics that point at one name).
    public var peerColumns: [Int] = []
    /// `tier free|premium`; nil = any tier.
    public var tier: PeerTier? = nil
    /// `proto …`; empty = any protocol.
    public var protocols: [IPProtocol] = []
    /// `from ADDR|CIDR[,…]`; empty = any source (unless `sourceGateway`).
    public var sources: [IPPrefix] = []
    /// `to ADDR|CIDR[,…]`; empty = any destination (unless `destinationGateway`).
    public var destinations: [IPPrefix] = []
    /// `from gateway`: the list names the gateway's own tunnel addresses, which are not in the
    /// rule file but bound from the configuration (`PolicySet.bindingGateway`), as peer names are.
    /// The list then constrains the source even while `sources` is empty: an unbound `gateway`
    /// matches no address.
    public var sourceGateway = false
    /// `to gateway`: see `sourceGateway`.
    public var destinationGateway = false
    /// `sport N|N-M[,…]`; empty = any. A port list matches only TCP and UDP flows.
    public var sourcePorts: [PortRange] = []
    /// `port N|N-M[,…]` (destination port); empty = any. Matches only TCP and UDP flows.
    public var destinationPorts: [PortRange] = []
    /// `host PATTERN[,…]`; empty = any. A non-empty list never matches a flow whose host is unknown.
    public var hosts: [HostPattern] = []
    /// `during HH:MM-HH:MM [DAYS]`; nil = always.
    public var window: TimeWindow? = nil
    /// `name NAME`.
    public var name: String? = nil
    /// `reason "TEXT"`.
    public var reason: String? = nil
    /// Where the rule was written.
    public var location: SourceLocation
    /// The rule's text as written (trimmed, without its comment).
    public var text: String

    /// A rule with only an action; fields are filled in by the parser.
    public init(action: Verdict, location: SourceLocation, text: String) {
        self.action = action
        self.location = location
        self.text = text
    }
}

/// An inclusive port range; a single port is `lower == upper`.
public struct PortRange: Sendable, Hashable, CustomStringConvertible {
    public var lower: UInt16
    public var upper: UInt16
    /// A range from its inclusive bounds (`lower <= upper`).
    public init(_ lower: UInt16, _ upper: UInt16) {
        self.lower = lower
        self.upper = upper
    }
    /// True when `port` is inside the range.
    @inlinable public func contains(_ port: UInt16) -> Bool { port >= lower && port <= upper }
    /// `N` or `N-M`.
    public var description: String { lower == upper ? "\(lower)" : "\(lower)-\(upper)" }
}

/// A `host` pattern. `example.com` matches that name only; `*.example.com` matches every name
/// below it (`a.example.com`, `a.b.example.com`) but **not** `example.com` itself — write both to
/// cover both. Matching ignores ASCII case and one trailing dot.
public enum HostPattern: Sendable, Hashable, CustomStringConvertible {
    /// The name itself (lower case, no trailing dot).
    case exact(String)
    /// Any name strictly below this suffix (stored without the `*.`).
    case subdomains(of: String)

    /// True when `host` matches (the reference definition; the compiled evaluator agrees with it).
    public func matches(_ host: String) -> Bool {
        let h = HostPattern.normalize(host)
        switch self {
        case .exact(let name): return h == name
        case .subdomains(let suffix): return h.count > suffix.count + 1 && h.hasSuffix("." + suffix)
        }
    }

    /// Lower-cases ASCII and drops one trailing dot.
    public static func normalize(_ host: String) -> String {
        var s = host.lowercased()
        if s.hasSuffix(".") { s.removeLast() }
        return s
    }

    /// `example.com` or `*.example.com`.
    public var description: String {
        switch self {
        case .exact(let name): return name
        case .subdomains(let suffix): return "*." + suffix
        }
    }
}

/// A `during` window: minutes of the day and the days it starts on. A window that crosses midnight
/// (`22:00-07:00`) belongs to the day it starts on: `during 22:00-07:00 fri` covers Friday 22:00 to
/// Saturday 07:00, and Friday 00:00-07:00 only if Thursday is listed too.
public struct TimeWindow: Sendable, Hashable, CustomStringConvertible {
    /// Start, minutes after local midnight (0...1439).
    public var start: Int
    /// End (exclusive), minutes after local midnight (1...1440); `end <= start` crosses midnight.
    public var end: Int
    /// Bit `d` set = the window starts on day `d` (0 = Monday … 6 = Sunday).
    public var days: UInt8

    /// A window from its minutes and day mask.
    public init(start: Int, end: Int, days: UInt8) {
        self.start = start
        self.end = end
        self.days = days
    }

    /// True when `minuteOfWeek` (0 = Monday 00:00 local) is inside the window.
    public func contains(minuteOfWeek m: Int) -> Bool {
        for (lo, hi) in intervals() where m >= lo && m < hi { return true }
        return false
    }

    /// Half-open minute-of-week intervals covered, split at the end of the week.
    public func intervals() -> [(Int, Int)] {
        var out: [(Int, Int)] = []
        for d in 0..<7 where days & (1 << d) != 0 {
            let lo = d * 1440 + start
            let hi = d * 1440 + (end > start ? end : end + 1440)
            if hi <= PolicyClock.minutesPerWeek {
                out.append((lo, hi))
            } else {
                out.append((lo, PolicyClock.minutesPerWeek))
                out.append((0, hi - PolicyClock.minutesPerWeek))
            }
        }
        return out
    }

    /// Day names, Monday first (index = day number).
    public static let dayNames = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]

    /// `HH:MM-HH:MM` followed by the days when not every day.
    public var description: String {
        func hm(_ m: Int) -> String {
            let h = m / 60, mm = m % 60
            return (h < 10 ? "0" : "") + "\(h):" + (mm < 10 ? "0" : "") + "\(mm)"
        }
        var s = hm(start) + "-" + hm(end)
        if days != 0x7F {
            s += " " + (0..<7).filter { days & (1 << $0) != 0 }.map { TimeWindow.dayNames[$0] }.joined(separator: ",")
        }
        return s
    }
}

/// A place in a rule file: file name (as given to the parser), 1-based line and column (columns
/// count bytes).
public struct SourceLocation: Sendable, Hashable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var column: Int
    public init(file: String, line: Int, column: Int = 1) {
        self.file = file
        self.line = line
        self.column = column
    }
    /// `file:line`.
    public var description: String { "\(file):\(line)" }
}
