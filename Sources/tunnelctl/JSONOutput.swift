import Core
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Packet
import Policy

/// How every `--json` is written (docs/json.md is the contract): Codable types, one encoder
/// configuration, keys sorted. A command prints one pretty-printed document; `watch --json`
/// prints one compact object per line. Absent values are `null` (`@Nullable`), times ISO 8601
/// UTC with milliseconds (`TimeText.iso`), durations seconds (`JSONSeconds`), sizes bytes,
/// protocols by name (`IPProtocol`), rules `RuleRef` objects.
enum JSONOutput {
    /// The one encoder configuration; `lines` drops the pretty-printing (one object per line).
    static func encoder(lines: Bool = false) -> JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = lines ? [.sortedKeys, .withoutEscapingSlashes] : [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return e
    }

    /// A command's answer: one pretty-printed document.
    static func document<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try encoder().encode(value), as: UTF8.self)
    }

    /// One object on one line (`watch --json`).
    static func line<T: Encodable>(_ value: T, encoder: JSONEncoder = JSONOutput.encoder(lines: true)) throws -> String {
        String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}

extension Tunnelctl {
    /// A command's `--json` answer (`JSONOutput.document`).
    static func encodeJSON<T: Encodable>(_ value: T) throws -> String { try JSONOutput.document(value) }
}

/// An optional that encodes `nil` as `null` instead of leaving the key out (synthesized
/// `Encodable` omits nil optionals). Every optional field of a `--json` type carries it.
@propertyWrapper
struct Nullable<Value: Encodable>: Encodable {
    var wrappedValue: Value?
    init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        if let v = wrappedValue { try c.encode(v) } else { try c.encodeNil() }
    }
}

extension Nullable: Equatable where Value: Equatable {}
extension Nullable: Hashable where Value: Hashable {}
extension Nullable: Sendable where Value: Sendable {}

/// A time: ISO 8601 UTC with milliseconds (`2026-03-01T12:00:00.000Z`).
struct JSONTime: Encodable, Hashable {
    var ms: Int64
    init(ms: Int64) { self.ms = ms }
    /// From Unix nanoseconds (ring records, pcap files), truncated to the millisecond.
    init(nanoseconds ns: UInt64) { ms = Int64(ns / 1_000_000) }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(TimeText.iso(ms))
    }
}

/// A duration in seconds: an integer when whole, else a fraction (`0.5`).
struct JSONSeconds: Encodable, Hashable {
    var ms: Int64
    init(ms: Int64) { self.ms = ms }
    init(seconds: Int64) { ms = seconds * 1000 }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        if ms % 1000 == 0 { try c.encode(ms / 1000) } else { try c.encode(Double(ms) / 1000) }
    }
}

/// A rule: where it is written and its `name`. The one JSON form of a rule; a default verdict
/// is a `null` rule next to `"default": true`.
struct RuleRef: Encodable, Hashable {
    var file: String
    var line: Int
    @Nullable var name: String?

    init(file: String, line: Int, name: String?) {
        self.file = file
        self.line = line
        self.name = name
    }

    /// A rule of a parsed or compiled policy.
    init(_ rule: PolicyRule) { self.init(file: rule.location.file, line: rule.location.line, name: rule.name) }
}

/// What the store's `rule` text column says (`flows.rule`, `refusals.rule`): the daemon writes
/// `FILE:LINE` for a rule, `default` (refusals) or nothing (flows: NULL) for a default, and ''
/// for a session refusal. The one parser of that text.
enum StoredRule: Equatable {
    case rule(file: String, line: Int)
    case byDefault
    /// No rule applies (a session refusal) or the text is not one the daemon writes.
    case none

    init(_ text: String?) {
        guard let text, !text.isEmpty else {
            self = .none
            return
        }
        if text == "default" {
            self = .byDefault
            return
        }
        guard let colon = text.lastIndex(of: ":"), colon != text.startIndex,
              let line = Int(text[text.index(after: colon)...]), line > 0 else {
            self = .none
            return
        }
        self = .rule(file: String(text[..<colon]), line: line)
    }
}

extension RuleRef {
    /// The `rule` and `default` fields of a stored row: its rule text (`FILE:LINE`, `default`,
    /// nothing) and the decision it keeps (the rule's name as it was when it decided). A row
    /// stored before decisions were kept has no name: null, never the name of whatever rule
    /// is written at that place now. `default` is nil when no rule or default applies (a
    /// session refusal, a pending verdict).
    static func stored(_ text: String?, decision: DecidedRule?, decided: Bool = true) -> (rule: RuleRef?, isDefault: Bool?) {
        switch StoredRule(text) {
        case .rule(let file, let line): return (RuleRef(file: file, line: line, name: decision?.name), false)
        case .byDefault: return (nil, true)
        case .none: return (nil, decided ? true : nil)
        }
    }
}

/// The store's flow key (`tcp 192.168.1.5:22`, `tcp [fd00::1]:22`, `icmp 8.8.8.8`: what
/// `StateStore.flowKey` writes) as its parts; nil for '' (session refusals) or other text.
struct StoredFlowKey: Equatable {
    var proto: IPProtocol
    var dst: IPAddress
    var dstPort: UInt16?

    init?(_ text: String) {
        let parts = text.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, let p = IPProtocol(name: parts[0]) else { return nil }
        proto = p
        if p.hasPorts {
            guard let e = Endpoint(parts[1]) else { return nil }
            dst = e.address
            dstPort = e.port
        } else {
            guard let a = IPAddress(parts[1]) else { return nil }
            dst = a
            dstPort = nil
        }
    }
}

/// A capture location: the pcap file's sequence and the record's byte offset in it.
struct CaptureRef: Encodable, Hashable {
    var file: UInt32
    var offset: UInt64
    init(_ l: CaptureLocation) {
        file = l.fileSequence
        offset = l.offset
    }
}

/// A FLOW as `policy test` and `explain 'FLOW'` read it (`PolicyFlow`).
struct FlowQueryJSON: Encodable {
    var proto: IPProtocol
    var src: String
    @Nullable var srcPort: UInt16?
    var dst: String
    @Nullable var dstPort: UInt16?
    var direction: Direction
    @Nullable var peer: String?
    @Nullable var tier: PeerTier?
    @Nullable var host: String?
    /// The FLOW's `at` (a local time) as an instant; null when not given (now).
    @Nullable var at: JSONTime?

    init(_ f: PolicyFlow, zone: Zone) {
        proto = f.proto
        src = f.source.description
        srcPort = f.proto.hasPorts ? f.sourcePort : nil
        dst = f.destination.description
        dstPort = f.proto.hasPorts ? f.destinationPort : nil
        direction = f.direction
        peer = f.peer
        tier = f.tier
        host = f.host
        at = f.at.flatMap { TimeText.parseDate($0, zone: zone) }.map(JSONTime.init(ms:))
    }
}
