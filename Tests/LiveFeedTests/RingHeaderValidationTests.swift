import Core
import Foundation
import Runtime
import Testing
@testable import LiveFeed

@Suite struct RingHeaderValidationTests {
    /// A valid ring file left on disk (the producer is closed and gone).
    private func validRing(_ dir: TemporaryDirectory, slots: Int = 8) throws -> String {
        let producer = try RingProducer(directory: dir.path, slotCount: slots)
        return producer.path
    }

    @Test func missingFileIsNotFound() {
        let dir = TemporaryDirectory()
        #expect(throws: RingError.notFound(path: dir.file("live.ring"))) {
            try RingConsumer(path: dir.file("live.ring"))
        }
    }

    @Test func badMagicIsRejected() throws {
        let dir = TemporaryDirectory()
        let path = try validRing(dir)
        try patch(path, offset: 0, bytes: Array("XVR1".utf8))
        #expect(throws: RingError.badMagic(path: path, found: 0x3152_5658)) { try RingConsumer(path: path) }
    }

    @Test func unknownVersionIsRejected() throws {
        let dir = TemporaryDirectory()
        let path = try validRing(dir)
        try patch(path, offset: 4, bytes: [2, 0, 0, 0])
        #expect(throws: RingError.unsupportedVersion(path: path, found: 2, supported: 1)) { try RingConsumer(path: path) }
    }

    @Test func badGeometryIsRejected() throws {
        let dir = TemporaryDirectory()
        let path = try validRing(dir)
        for (offset, bytes) in [(8, [0, 2, 0, 0] as [UInt8]), (12, [64, 0, 0, 0]), (16, [3, 0, 0, 0]), (16, [0, 0, 0, 0]), (16, [4, 0, 0, 0])] {
            let original = try #require(FileManager.default.contents(atPath: path))
            try patch(path, offset: offset, bytes: bytes)
            #expect {
                try RingConsumer(path: path)
            } throws: { error in
                guard case .badGeometry(let p, let reason) = error as? RingError else { return false }
                return p == path && !reason.isEmpty
            }
            try original.write(to: URL(fileURLWithPath: path))
        }
        // Restored: attaches again.
        _ = try RingConsumer(path: path)
    }

    @Test func truncatedFilesAreRejected() throws {
        let dir = TemporaryDirectory()
        let path = try validRing(dir)
        #expect(truncate(path, 256 + 5 * 128) == 0)
        #expect(throws: RingError.truncated(path: path, size: 256 + 5 * 128, expected: 256 + 8 * 128)) { try RingConsumer(path: path) }
        // Every truncation of the header itself.
        for size in [0, 1, 4, 63, 200, 255] {
            #expect(truncate(path, off_t(size)) == 0)
            #expect(throws: RingError.truncated(path: path, size: size, expected: 256)) { try RingConsumer(path: path) }
        }
    }

    @Test func producerRejectsBadSlotCounts() {
        let dir = TemporaryDirectory()
        for count in [0, 1, 3, 100, 1 << 21] {
            #expect(throws: RingError.self) { try RingProducer(directory: dir.path, slotCount: count) }
        }
    }

    @Test func producerInAMissingDirectorySaysOpenFailed() {
        let dir = TemporaryDirectory()
        let missing = dir.file("no/such/dir")
        let temporary = "\(missing)/live.ring.tmp.\(getpid())"
        #expect(throws: RingError.system(SystemError("open(\(temporary))", errno: ENOENT))) {
            try RingProducer(directory: missing, slotCount: 8)
        }
        #expect(RingError.system(SystemError("open(\(temporary))", errno: ENOENT)).description
            == "live ring: open(\(temporary)): No such file or directory (ENOENT)")
    }

    @Test func secondConsumerIsBusy() throws {
        let dir = TemporaryDirectory()
        let producer = try RingProducer(directory: dir.path, slotCount: 8)
        let first = try RingConsumer(path: producer.path)
        #expect(throws: RingError.busy(path: producer.path)) { try RingConsumer(path: producer.path) }
        _ = first
    }

    @Test func errorsSayWhatAndWhere() {
        let text = RingError.badMagic(path: "/run/tv/live.ring", found: 0x1234).description
        #expect(text.contains("/run/tv/live.ring") && text.contains("TVR1"))
        #expect(RingError.truncated(path: "/x", size: 3, expected: 256).description.contains("restart tunneld"))
    }
}
