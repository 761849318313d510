import Core
import Capture
import Foundation
import Testing

/// The daemon's spooler writes, through its thread, exactly the files `CaptureWriter` writes in
/// line — same names, same bytes — and the locations it returns at once are where the records end
/// up, across rotations, detail changes and off/on.
@Suite struct CaptureSpoolerTests {
    static func tempDir(_ tag: String) throws -> String {
        let p = FileManager.default.temporaryDirectory
            .appendingPathComponent("tv-spool-\(tag)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: p, withIntermediateDirectories: true)
        return p
    }

    @Test func sameFilesAsTheWriterAndLocationsHold() throws {
        let a = try Self.tempDir("writer"), b = try Self.tempDir("spooler")
        defer {
            try? FileManager.default.removeItem(atPath: a)
            try? FileManager.default.removeItem(atPath: b)
        }
        let writer = try CaptureWriter(directory: a, detail: .full, maxFileBytes: 20_000)
        let spooler = try CaptureSpooler(directory: b, detail: .full, maxFileBytes: 20_000)
        var rng = SystemRandomNumberGenerator()
        var expected: [CaptureLocation: [UInt8]] = [:]
        var time: UInt64 = 1_764_417_600_000_000_000
        for i in 0..<600 {
            if i == 200 { writer.setDetail(.metadata); spooler.setDetail(.metadata) }
            if i == 300 { writer.setEnabled(false); spooler.setEnabled(false) }
            if i == 350 { writer.setEnabled(true); spooler.setEnabled(true); writer.setDetail(.full); spooler.setDetail(.full) }
            if i % 97 == 0 { spooler.flush() }  // partial chunks must join up in the file
            let size = Int.random(in: 20...1500, using: &rng)
            let packet = (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) }
            time += 1_234
            let wl = writer.write(packet: packet, timestampNanoseconds: time)
            let sl = spooler.write(packet: packet, timestampNanoseconds: time)
            #expect(wl == sl)
            if let sl { expected[sl] = Array(packet.prefix(i >= 200 && i < 300 ? 128 : 262_144)) }
        }
        writer.close()
        spooler.close()
        let wf = try CaptureFiles.list(directory: a), sf = try CaptureFiles.list(directory: b)
        #expect(wf.count > 5)
        #expect(wf.map(\.sequence) == sf.map(\.sequence))
        for (x, y) in zip(wf, sf) {
            #expect(FileManager.default.contents(atPath: x.path) == FileManager.default.contents(atPath: y.path),
                    "file \(x.sequence) differs")
        }
        var seen = 0
        for f in sf {
            try CaptureReader.forEachPacket(in: f) { location, _, _, bytes in
                #expect(expected[location] == Array(bytes))
                seen += 1
            }
        }
        #expect(seen == expected.count && spooler.dropped == 0 && spooler.failures == 0)
    }

    @Test func syncMakesFlushedRecordsReadable() throws {
        let dir = try Self.tempDir("sync")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let spooler = try CaptureSpooler(directory: dir, detail: .full)
        for i in 0..<10 { spooler.write(packet: [0x45] + [UInt8](repeating: UInt8(i), count: 99), timestampNanoseconds: UInt64(i)) }
        spooler.sync()
        let files = try CaptureFiles.list(directory: dir, scan: true)
        #expect(files.map(\.packetCount) == [10])
        spooler.close()
    }

    @Test(.disabled(if: getuid() == 0, "root can write into a read-only directory"))
    func unwritableDirectoryIsCountedNotFatal() throws {
        let dir = try Self.tempDir("ro")
        defer { chmod(dir, 0o755); try? FileManager.default.removeItem(atPath: dir) }
        let spooler = try CaptureSpooler(directory: dir, detail: .full)
        chmod(dir, 0o500)
        #expect(spooler.write(packet: [0x45, 0, 0, 20], timestampNanoseconds: 1) != nil)
        spooler.sync()
        #expect(spooler.failures == 1)
        spooler.close()
    }
}
