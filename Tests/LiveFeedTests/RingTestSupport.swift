import Core
import Foundation
@testable import LiveFeed

/// A fresh temporary directory per test, removed when the value is dropped.
final class TemporaryDirectory {
    let path: String

    init() {
        let template = NSTemporaryDirectory() + "livefeed-test-XXXXXX"
        var bytes = Array(template.utf8CString)
        path = bytes.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { "\(path)/\(name)" }
}

/// A record with recognisable fields.
func sampleRecord(_ n: UInt64, v6: Bool = false) -> LiveRecord {
    var r = LiveRecord()
    r.timeNanoseconds = 1_700_000_000_000_000_000 + n
    r.flowID = n
    r.kind = .packet
    r.direction = n % 2 == 0 ? .out : .in
    r.ipProtocol = 6
    r.ipVersion = v6 ? 6 : 4
    if v6 {
        r.sourceHigh = 0xFD99_0000_0000_0000
        r.sourceLow = 2
        r.destinationHigh = 0x2001_0DB8_0000_0000
        r.destinationLow = n
    } else {
        r.sourceLow = 0x0A63_0002
        r.destinationLow = 0xC0A8_0105
    }
    r.sourcePort = 40000
    r.destinationPort = 443
    r.length = 60 + UInt32(n)
    r.tcpFlags = 0x02
    r.verdict = .allow
    r.ruleIndex = 3
    r.peerIndex = 1
    r.peerName = LivePeerName("alice")
    r.captureFileSequence = 42
    r.captureOffset = 24 + n * 100
    return r
}

/// Overwrites `bytes` at `offset` of the file at `path`.
func patch(_ path: String, offset: Int, bytes: [UInt8]) throws {
    let handle = try require_file(FileHandle(forUpdatingAtPath: path), path)
    try handle.seek(toOffset: UInt64(offset))
    handle.write(Data(bytes))
    try handle.close()
}

struct MissingFile: Error { let path: String }

/// Unwraps or throws.
func require_file<T>(_ value: T?, _ path: String) throws -> T {
    guard let value else { throw MissingFile(path: path) }
    return value
}
