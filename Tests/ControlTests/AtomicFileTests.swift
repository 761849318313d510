import Config
import Foundation
import Glibc
import Runtime
import Testing

/// `AtomicFile.replace`: new contents land whole, mode is kept, and a failure injected between the
/// write and the rename leaves the old file and no temporary file.
@Suite struct AtomicFileTests {
    func tempDir() throws -> String {
        let d = NSTemporaryDirectory() + "atomic-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: false)
        return d
    }

    @Test func replacesAndKeepsMode() throws {
        let d = try tempDir()
        defer { try? FileManager.default.removeItem(atPath: d) }
        let p = d + "/tunneld.conf"
        try Data("old\n".utf8).write(to: URL(fileURLWithPath: p))
        chmod(p, 0o640)
        try AtomicFile.replace(p, contents: Array("new\n".utf8))
        #expect(try String(contentsOfFile: p, encoding: .utf8) == "new\n")
        #expect(try Sys.stat(p).st_mode & 0o7777 == 0o640)
        #expect(try FileManager.default.contentsOfDirectory(atPath: d) == ["tunneld.conf"])
    }

    @Test func newFileGetsNewMode() throws {
        let d = try tempDir()
        defer { try? FileManager.default.removeItem(atPath: d) }
        try AtomicFile.replace(d + "/k", contents: [1, 2, 3], newMode: 0o600)
        #expect(try Sys.stat(d + "/k").st_mode & 0o7777 == 0o600)
    }

    @Test func failureBeforeRenameLeavesTheOldFile() throws {
        let d = try tempDir()
        defer { try? FileManager.default.removeItem(atPath: d) }
        let p = d + "/tunneld.conf"
        try Data("old\n".utf8).write(to: URL(fileURLWithPath: p))
        var sawTemp = false
        #expect(throws: SystemError.self) {
            try AtomicFile.replace(p, contents: Array("new\n".utf8)) { () throws(SystemError) in
                sawTemp = (try? FileManager.default.contentsOfDirectory(atPath: d).count) == 2
                throw SystemError("injected", errno: EIO)
            }
        }
        #expect(sawTemp)
        #expect(try String(contentsOfFile: p, encoding: .utf8) == "old\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: d) == ["tunneld.conf"])
    }

    @Test func missingDirectoryIsAnError() {
        #expect(throws: SystemError.self) { try AtomicFile.replace("/nonexistent-dir-xyz/f", contents: [1]) }
    }
}
