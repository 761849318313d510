import Core
import Foundation
import Testing
@testable import Capture

@Suite struct CaptureFilesTests {
    @Test func namesCarryTheSequence() {
        #expect(CaptureFiles.fileName(sequence: 42) == "capture-000042.pcap")
        #expect(CaptureFiles.fileName(sequence: 1_234_567) == "capture-1234567.pcap")
        #expect(CaptureFiles.sequence(fromFileName: "capture-000042.pcap") == 42)
        #expect(CaptureFiles.sequence(fromFileName: "capture-1234567.pcap") == 1_234_567)
        for bad in ["capture-42.pcap", "capture-00004a.pcap", "capture-000042.pcapng", "x-000042.pcap", "capture-.pcap", "capture-٠٠٠٠٤٢.pcap"] {
            #expect(CaptureFiles.sequence(fromFileName: bad) == nil, "\(bad)")
        }
    }

    @Test func missingDirectoryListsEmpty() throws {
        let dir = TemporaryDirectory()
        #expect(try CaptureFiles.list(directory: dir.file("nope")).isEmpty)
    }

    /// Makes capture files 1...n of `size` bytes each, file i modified at `base + i` seconds.
    private func makeFiles(_ dir: TemporaryDirectory, count: Int, size: Int, base: Int) throws {
        for i in 1...count {
            let path = dir.file(CaptureFiles.fileName(sequence: UInt32(i)))
            try Data(count: size).write(to: URL(fileURLWithPath: path))
            var times = [timeval(tv_sec: base + i, tv_usec: 0), timeval(tv_sec: base + i, tv_usec: 0)]
            #expect(utimes(path, &times) == 0)
        }
        try Data("other".utf8).write(to: URL(fileURLWithPath: dir.file("notes.txt")))
    }

    @Test func pruneBySizeRemovesOldestFirstAndKeepsTheActiveFile() throws {
        let dir = TemporaryDirectory()
        try makeFiles(dir, count: 6, size: 1000, base: 1_000_000)
        let now: UInt64 = 1_000_100 * 1_000_000_000
        _ = now
        let result = try CaptureFiles.prune(directory: dir.path, CapturePruneRequest(olderThan: nil, maxTotalBytes: 2500, dryRun: false))
        #expect(result.removedSequences == [1, 2, 3, 4])
        #expect(result.bytes == 4000 && result.files == 4)
        #expect(try CaptureFiles.list(directory: dir.path).map(\.sequence) == [5, 6])
        // The active file is kept even when it alone is over budget.
        let again = try CaptureFiles.prune(directory: dir.path, CapturePruneRequest(olderThan: nil, maxTotalBytes: 0, dryRun: false), keeping: 6)
        #expect(again.removedSequences == [5])
        #expect(try CaptureFiles.list(directory: dir.path).map(\.sequence) == [6])
        #expect(FileManager.default.fileExists(atPath: dir.file("notes.txt")))
    }

    @Test func pruneByAge() throws {
        let dir = TemporaryDirectory()
        try makeFiles(dir, count: 5, size: 10, base: 1_000_000)
        // Files are modified at 1_000_001 … 1_000_005; now is 1_000_010; max age 6 s keeps 4 and 5.
        let result = try CaptureFiles.prune(directory: dir.path, CapturePruneRequest(olderThan: (1_000_010 - 6) * 1000, maxTotalBytes: nil, dryRun: false),
                                            keeping: 1)
        #expect(result.removedSequences == [2, 3])
        #expect(try CaptureFiles.list(directory: dir.path).map(\.sequence) == [1, 4, 5])
        let none = try CaptureFiles.prune(directory: dir.path, CapturePruneRequest(olderThan: nil, maxTotalBytes: nil, dryRun: false))
        #expect(none.removedSequences.isEmpty)
    }

    @Test func dryRunCountsTheSameFilesAndDeletesNothing() throws {
        let dir = TemporaryDirectory()
        try makeFiles(dir, count: 6, size: 1000, base: 1_000_000)
        let dry = try CaptureFiles.prune(directory: dir.path, CapturePruneRequest(olderThan: nil, maxTotalBytes: 2500, dryRun: true), keepNewest: true)
        #expect(try CaptureFiles.list(directory: dir.path).count == 6)
        let real = try CaptureFiles.prune(directory: dir.path, CapturePruneRequest(olderThan: nil, maxTotalBytes: 2500, dryRun: false), keepNewest: true)
        #expect(dry == real && real.removedSequences == [1, 2, 3, 4])
        // keepNewest: the newest file survives even a zero budget (tunnelctl cannot know which file tunneld writes).
        let zero = try CaptureFiles.prune(directory: dir.path, CapturePruneRequest(olderThan: nil, maxTotalBytes: 0, dryRun: false), keepNewest: true)
        #expect(zero.removedSequences == [5])
        #expect(try CaptureFiles.list(directory: dir.path).map(\.sequence) == [6])
    }

    @Test func pruneNextToALiveWriter() throws {
        let dir = TemporaryDirectory()
        let writer = try CaptureWriter(directory: dir.path, maxFileBytes: 4096)
        for (i, p) in trafficMix(count: 100).enumerated() { writer.write(packet: p, timestampNanoseconds: UInt64(i) * 1000) }
        let active = try #require(writer.currentSequence)
        let result = try CaptureFiles.prune(directory: dir.path, CapturePruneRequest(olderThan: nil, maxTotalBytes: 1, dryRun: false),
                                            keeping: writer.currentSequence)
        #expect(!result.removedSequences.isEmpty)
        #expect(try CaptureFiles.list(directory: dir.path).map(\.sequence) == [active])
        // The writer keeps going, into the same file and then new ones.
        #expect(writer.write(packet: trafficMix(count: 1)[0], timestampNanoseconds: 1)?.fileSequence ?? 0 >= active)
        writer.close()
    }
}
