import Core
import Foundation
import Testing

@testable import tunnelctl

/// A JSON value as the golden files hold it (bools, integers and fractions kept apart).
enum GoldenJSON: Codable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([GoldenJSON])
    case object([String: GoldenJSON])

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let i = try? c.decode(Int64.self) { self = .int(i) }
        else if let d = try? c.decode(Double.self) { self = .double(d) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let a = try? c.decode([GoldenJSON].self) { self = .array(a) }
        else { self = .object(try c.decode([String: GoldenJSON].self)) }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .int(let i): try c.encode(i)
        case .double(let d): try c.encode(d)
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }

    var isNull: Bool { self == .null }
    var isNumber: Bool {
        switch self {
        case .int, .double: return true
        default: return false
        }
    }
}

/// The conventions of docs/json.md, checked mechanically on every golden `.json` / `.jsonl`
/// file, and every object in them against the field tables of docs/json.md.
@Suite struct JSONSchemaTests {
    static var goldenFiles: [URL] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: HistoryFixture.golden.path)) ?? []
        return names.filter { $0.hasSuffix(".json") || $0.hasSuffix(".jsonl") }.sorted()
            .map { HistoryFixture.golden.appendingPathComponent($0) }
    }

    /// Every document of every golden file (a `.jsonl` file: one per line), with its name.
    static func documents() throws -> [(name: String, value: GoldenJSON)] {
        var out: [(String, GoldenJSON)] = []
        for url in goldenFiles {
            let text = try String(contentsOf: url, encoding: .utf8)
            if url.pathExtension == "jsonl" {
                for (i, line) in text.split(separator: "\n").enumerated() {
                    out.append(("\(url.lastPathComponent):\(i + 1)", try JSONDecoder().decode(GoldenJSON.self, from: Data(line.utf8))))
                }
            } else {
                out.append((url.lastPathComponent, try JSONDecoder().decode(GoldenJSON.self, from: Data(text.utf8))))
            }
        }
        return out
    }

    /// Keys that hold a time (besides any key ending in `At`).
    static let timeKeys: Set<String> = ["time", "at", "now", "since", "until", "cutoff", "window", "firstSeen", "lastSeen",
                                        "lastHandshake", "firstRefused", "lastRefused", "lastAttempt", "allowedUntil"]
    static func isTimeKey(_ k: String) -> Bool { timeKeys.contains(k) || k.hasSuffix("At") }

    /// `2026-03-01T12:00:00.000Z`: what `TimeText.iso` writes.
    static func isISOWithMilliseconds(_ s: String) -> Bool {
        let b = Array(s.utf8)
        guard b.count == 24, b[23] == UInt8(ascii: "Z"), b[19] == UInt8(ascii: ".") else { return false }
        return TimeText.parseISO(s) != nil && TimeText.iso(TimeText.parseISO(s)!) == s
    }

    static func looksLikeADate(_ s: String) -> Bool {
        let b = Array(s.utf8)
        guard b.count >= 10 else { return false }
        let digit = { (i: Int) in b[i] >= 0x30 && b[i] <= 0x39 }
        return (0..<4).allSatisfy(digit) && b[4] == UInt8(ascii: "-") && digit(5) && digit(6) && b[7] == UInt8(ascii: "-")
    }

    /// `10.0.0.1:22` or `[fd00::1]:22`: an address and a port in one string.
    static func looksLikeAddressAndPort(_ s: String) -> Bool {
        guard let colon = s.lastIndex(of: ":"), let port = UInt16(s[s.index(after: colon)...]) else { return false }
        _ = port
        let host = s[..<colon]
        if host.hasPrefix("[") && host.hasSuffix("]") { return IPAddress(host.dropFirst().dropLast()) != nil }
        return IPAddress(host) != nil
    }

    static func check(_ v: GoldenJSON, at path: String, key: String?, problems: inout [String]) {
        switch v {
        case .string(let s):
            if s.isEmpty { problems.append("\(path): \"\" (absent values are null)") }
            if let key, isTimeKey(key), !isISOWithMilliseconds(s) { problems.append("\(path): time '\(s)' is not ISO 8601 UTC with ms") }
            if looksLikeADate(s) && !isISOWithMilliseconds(s) { problems.append("\(path): date '\(s)' is not ISO 8601 UTC with ms") }
            if looksLikeAddressAndPort(s) { problems.append("\(path): '\(s)' joins an address and a port") }
        case .array(let a):
            var keySets = Set<[String]>()
            for (i, e) in a.enumerated() {
                if case .object(let o) = e { keySets.insert(o.keys.sorted()) }
                check(e, at: "\(path)[\(i)]", key: key, problems: &problems)
            }
            if keySets.count > 1 { problems.append("\(path): objects of one array have different keys \(keySets.sorted { $0.count < $1.count })") }
        case .object(let o):
            checkObject(o, at: path, problems: &problems)
            for (k, e) in o.sorted(by: { $0.key < $1.key }) {
                check(e, at: "\(path).\(k)", key: k, problems: &problems)
            }
        case .null, .bool, .int, .double:
            if let key, isTimeKey(key), !v.isNull { problems.append("\(path): a time must be an ISO string, not \(v)") }
        }
    }

    static func checkObject(_ o: [String: GoldenJSON], at path: String, problems: inout [String]) {
        let isRule = Set(o.keys) == ["file", "line", "name"]
        for (k, v) in o {
            let at = "\(path).\(k)"
            if k.hasSuffix("Ms") || k.hasSuffix("Ns") { problems.append("\(at): a key ending in Ms/Ns (times are ISO strings)") }
            if k == "peerName" || (k == "name" && !isRule) { problems.append("\(at): the peer is 'peer'; 'name' only in a rule") }
            if k == "proto" {
                if case .string(let s) = v {
                    if IPProtocol(name: s)?.name != s { problems.append("\(at): '\(s)' is not a protocol name") }
                } else if !v.isNull {
                    problems.append("\(at): proto must be a name, not \(v)")
                }
            }
            if (k.hasSuffix("Seconds") || k.hasSuffix("Bytes") || k == "bytes") && !(v.isNumber || v.isNull) {
                problems.append("\(at): sizes and durations are numbers, not \(v)")
            }
            if k == "srcPort" || k == "dstPort" || k == "endpointPort" {
                if !(v.isNumber || v.isNull) { problems.append("\(at): a port is a number") }
                if case .string(let p)? = o["proto"], let proto = IPProtocol(name: p), !proto.hasPorts, !v.isNull {
                    problems.append("\(at): \(p) has no ports: null")
                }
            }
            if k == "rule" {
                switch v {
                case .null: break
                case .object(let r):
                    var ok = Set(r.keys) == ["file", "line", "name"]
                    if case .string(let f)? = r["file"], !f.isEmpty {} else { ok = false }
                    if case .int(let l)? = r["line"], l > 0 {} else { ok = false }
                    switch r["name"] {
                    case .string?, .null?: break
                    default: ok = false
                    }
                    if !ok { problems.append("\(at): a rule is {file, line, name}, not \(v)") }
                default:
                    problems.append("\(at): a rule is null or {file, line, name}, not \(v)")
                }
                switch o["default"] {
                case .bool(true)?: if !v.isNull { problems.append("\(at): a default decided, yet a rule is named") }
                case .bool(false)?: if v.isNull { problems.append("\(at): a rule decided, yet 'rule' is null") }
                case .null?: if !v.isNull { problems.append("\(at): a rule is named but 'default' is null") }
                default: problems.append("\(path): 'rule' without 'default' (true, false or null)")
                }
            }
        }
    }

    @Test func everyGoldenFollowsTheConventions() throws {
        let docs = try Self.documents()
        #expect(Self.goldenFiles.count >= 35, "golden JSON files: \(Self.goldenFiles.map(\.lastPathComponent))")
        var problems: [String] = []
        for (name, value) in docs { Self.check(value, at: name, key: nil, problems: &problems) }
        #expect(problems.isEmpty, "\(problems.count) problems:\n\(problems.joined(separator: "\n"))")
    }

    @Test func jsonLinesAreOneCompactObjectPerLine() throws {
        for url in Self.goldenFiles where url.pathExtension == "jsonl" {
            for line in try String(contentsOf: url, encoding: .utf8).split(separator: "\n") {
                #expect(line.hasPrefix("{") && line.hasSuffix("}") && !line.contains("\" : "), "\(url.lastPathComponent): \(line)")
            }
        }
    }

    /// The field sets of docs/json.md: every table headed `| field | type | meaning |`, its
    /// first column's backticked names.
    static func documentedObjects() throws -> [String: Set<String>] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/json.md").standardized
        let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var out: [String: Set<String>] = [:]
        var heading = ""
        var i = 0
        while i < lines.count {
            let line = lines[i]
            if line.hasPrefix("#") { heading = line.trimmingCharacters(in: CharacterSet(charactersIn: "# ")) }
            if line.replacingOccurrences(of: " ", with: "") == "|field|type|meaning|" {
                var fields = Set<String>()
                i += 2
                while i < lines.count, lines[i].hasPrefix("|") {
                    let cell = lines[i].split(separator: "|", omittingEmptySubsequences: false)[1].trimmingCharacters(in: .whitespaces)
                    if cell.hasPrefix("`"), cell.hasSuffix("`") { fields.insert(String(cell.dropFirst().dropLast())) }
                    i += 1
                }
                out[heading] = fields
                continue
            }
            i += 1
        }
        return out
    }

    /// Keys whose object is a map (its keys are data, not fields).
    static let maps: Set<String> = ["drops", "hosts"]

    static func collectObjects(_ v: GoldenJSON, at path: String, into out: inout [(String, Set<String>)]) {
        switch v {
        case .array(let a):
            for (i, e) in a.enumerated() { collectObjects(e, at: "\(path)[\(i)]", into: &out) }
        case .object(let o):
            out.append((path, Set(o.keys)))
            for (k, e) in o where !maps.contains(k) { collectObjects(e, at: "\(path).\(k)", into: &out) }
        default:
            break
        }
    }

    @Test func everyGoldenObjectIsDocumented() throws {
        let documented = try Self.documentedObjects()
        #expect(documented.count >= 25, "tables found in docs/json.md: \(documented.keys.sorted())")
        let known = Set(documented.values)
        var undocumented: [String] = []
        var used = Set<Set<String>>()
        for (name, value) in try Self.documents() {
            var objects: [(String, Set<String>)] = []
            Self.collectObjects(value, at: name, into: &objects)
            for (path, keys) in objects {
                if known.contains(keys) { used.insert(keys) } else { undocumented.append("\(path): \(keys.sorted())") }
            }
        }
        #expect(undocumented.isEmpty, "objects whose fields no table of docs/json.md lists:\n\(undocumented.joined(separator: "\n"))")
        let unused = documented.filter { !used.contains($0.value) }.keys.sorted()
        #expect(unused.isEmpty, "docs/json.md tables no golden file shows: \(unused)")
    }
}
