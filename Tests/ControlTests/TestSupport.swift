import Core
import Foundation
import Testing
@testable import Config

#if canImport(Glibc)
import Glibc
#endif

/// Deterministic test keys: key(n) is 32 bytes of n, n+1, ….
func key(_ n: UInt8) -> WireGuardKey {
    WireGuardKey(bytes: (0..<32).map { n &+ UInt8($0) })!
}

/// A fresh private temporary directory, removed by the returned closure.
func makeTempDirectory() -> (String, @Sendable () -> Void) {
    var template = Array("/tmp/tvcontrol.XXXXXX".utf8CString)
    let path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    return (path, { _ = try? FileManager.default.removeItem(atPath: path) })
}

/// Writes `text` to `path` with `mode`.
func writeFile(_ path: String, _ text: String, mode: mode_t = 0o600) {
    _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
    chmod(path, mode)
}

/// Runs an executable, returning (exit status, stdout, stderr).
func run(_ executable: String, _ arguments: [String]) throws -> (Int32, String, String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: executable)
    p.arguments = arguments
    let out = Pipe()
    let err = Pipe()
    p.standardOutput = out
    p.standardError = err
    try p.run()
    let o = out.fileHandleForReading.readDataToEndOfFile()
    let e = err.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
}

/// A thread-safe box for values captured by `@Sendable` handlers in tests.
/// `@unchecked Sendable`: every access goes through `lock`.
final class Locked<T>: @unchecked Sendable {
    private var value: T
    private let lock = NSLock()
    init(_ value: T) { self.value = value }
    func get() -> T { lock.lock(); defer { lock.unlock() }; return value }
    func mutate(_ f: (inout T) -> Void) { lock.lock(); defer { lock.unlock() }; f(&value) }
}

let isRoot = geteuid() == 0
let wgPath: String? = ([String](["/usr/bin/wg", "/bin/wg", "/usr/sbin/wg"])).first { access($0, X_OK) == 0 }
