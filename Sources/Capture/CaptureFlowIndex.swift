import Runtime
#if canImport(Glibc)
import Core
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The flow index kept next to each capture file: `capture-NNNNNN.flows` lists, for every flow
/// whose *first captured packet* is in `capture-NNNNNN.pcap`, the flow's id, its 5-tuple as the
/// originator sent it, and the byte offset of that first record (docs/capture.md, "Flow index").
///
/// It makes a capture directory self-describing: `tunnelctl capture extract --flow ID` finds a
/// flow's key and first location even when the store has no row for it (flow rows written later,
/// pruned sooner, or no store at all). Records are fixed 64-byte little-endian entries, appended
/// through stdio (no allocation, no system call per entry; flushed with the pcap file).
///
/// `@unchecked Sendable`: one thread at a time (the capture's owner).
public final class CaptureFlowIndex: @unchecked Sendable {
    /// One entry: a flow and where its first captured packet is.
    public struct Entry: Hashable, Sendable {
        /// The daemon's flow id.
        public var flowID: UInt64
        /// The flow's key, originator as side `a`.
        public var key: CaptureFlowKey
        /// Where its first captured packet is.
        public var location: CaptureLocation
        /// Capture time of that packet, ns since the epoch (stored to the second).
        public var timeNanoseconds: UInt64

        /// An entry.
        public init(flowID: UInt64, key: CaptureFlowKey, location: CaptureLocation, timeNanoseconds: UInt64) {
            self.flowID = flowID
            self.key = key
            self.location = location
            self.timeNanoseconds = timeNanoseconds
        }
    }

    /// Size of one entry in the file.
    public static let entrySize = 64
    /// File name of the index for capture file `sequence`.
    public static func fileName(sequence: UInt32) -> String {
        let name = CaptureFiles.fileName(sequence: sequence)
        return String(name.dropLast(5)) + ".flows"
    }

    /// The capture directory.
    public let directory: String
    private var file: UnsafeMutablePointer<FILE>?
    private var fileSequence: UInt32 = 0
    /// Entries that could not be written (file not creatable).
    public private(set) var failures: UInt64 = 0

    /// An index writer for `directory` (the capture directory, which must exist).
    public init(directory: String) {
        self.directory = directory
    }

    deinit { close() }

    /// Appends `entry` to the index of its location's file (switching files when the capture
    /// rotated). Never throws: a failure is counted.
    public func append(_ entry: Entry) {
        if file == nil || fileSequence != entry.location.fileSequence {
            close()
            let path = "\(directory)/\(CaptureFlowIndex.fileName(sequence: entry.location.fileSequence))"
            guard let f = fopen(path, "ae") else {
                failures += 1
                return
            }
            file = f
            fileSequence = entry.location.fileSequence
        }
        var raw = CaptureFlowIndex.encode(entry)
        withUnsafeBytes(of: &raw) { bytes in
            if fwrite(bytes.baseAddress, 1, CaptureFlowIndex.entrySize, file) != CaptureFlowIndex.entrySize {
                failures += 1
            }
        }
    }

    /// Pushes buffered entries to the file.
    public func flush() {
        if let file { fflush(file) }
    }

    /// Flushes and closes the current index file.
    public func close() {
        if let file { fclose(file) }
        file = nil
    }

    /// The 64 bytes of an entry, eight little-endian words: id; a high, a low; b high, b low;
    /// a port | b port << 16 | version << 32 | protocol << 40; offset; sequence | seconds << 32.
    typealias Raw = (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

    static func encode(_ e: Entry) -> Raw {
        let ports = UInt64(e.key.aPort) | UInt64(e.key.bPort) << 16 | UInt64(e.key.ipVersion) << 32
            | UInt64(e.key.ipProtocol) << 40
        return (e.flowID.littleEndian, e.key.aHigh.littleEndian, e.key.aLow.littleEndian, e.key.bHigh.littleEndian,
                e.key.bLow.littleEndian, ports.littleEndian,
                e.location.offset.littleEndian,
                (UInt64(e.location.fileSequence) | (e.timeNanoseconds / 1_000_000_000) << 32).littleEndian)
    }

    static func decode(_ r: Raw) -> Entry {
        let ports = UInt64(littleEndian: r.5)
        let last = UInt64(littleEndian: r.7)
        let key = CaptureFlowKey(
            ipVersion: UInt8(truncatingIfNeeded: ports >> 32), ipProtocol: UInt8(truncatingIfNeeded: ports >> 40),
            aHigh: UInt64(littleEndian: r.1), aLow: UInt64(littleEndian: r.2), aPort: UInt16(truncatingIfNeeded: ports),
            bHigh: UInt64(littleEndian: r.3), bLow: UInt64(littleEndian: r.4),
            bPort: UInt16(truncatingIfNeeded: ports >> 16))
        return Entry(flowID: UInt64(littleEndian: r.0), key: key,
                     location: CaptureLocation(fileSequence: UInt32(truncatingIfNeeded: last),
                                               offset: UInt64(littleEndian: r.6)),
                     timeNanoseconds: (last >> 32) * 1_000_000_000)
    }

    /// Every entry of the index of capture file `sequence` in `directory` (empty when there is
    /// none). A trailing partial entry (crash mid-write) is ignored.
    public static func read(directory: String, sequence: UInt32) -> [Entry] {
        let path = "\(directory)/\(fileName(sequence: sequence))"
        guard let f = fopen(path, "re") else { return [] }
        defer { fclose(f) }
        var entries: [Entry] = []
        var raw: Raw = (0, 0, 0, 0, 0, 0, 0, 0)
        while withUnsafeMutableBytes(of: &raw, { fread($0.baseAddress, 1, entrySize, f) }) == entrySize {
            entries.append(decode(raw))
        }
        return entries
    }

    /// The newest entry for `flowID` in `directory` (flow ids restart with the daemon, so the
    /// latest file that lists it wins), nil when no index lists it.
    public static func find(flowID: UInt64, directory: String) throws(CaptureError) -> Entry? {
        for file in try CaptureFiles.list(directory: directory).reversed() {
            if let e = read(directory: directory, sequence: file.sequence).last(where: { $0.flowID == flowID }) {
                return e
            }
        }
        return nil
    }

    /// Deletes index files whose capture file is gone (after `CaptureFiles.prune`).
    public static func removeOrphans(directory: String) {
        guard let names = try? Sys.directoryEntries(directory) else { return }
        for name in names where name.hasPrefix("capture-") && name.hasSuffix(".flows") {
            let pcap = String(name.dropLast(6)) + ".pcap"
            if !Sys.exists("\(directory)/\(pcap)") { try? Sys.unlinkIfPresent("\(directory)/\(name)") }
        }
    }
}
