import Core
import CPcap
import Runtime
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes the gateway's packets to rotated libpcap files in the capture directory (docs/ring.md, docs/capture.md).
///
/// Files are raw-IP (`DLT_RAW`, link type 101) with nanosecond timestamps, made with
/// `pcap_open_dead` + `pcap_dump_open`, named `capture-NNNNNN.pcap` with a sequence that keeps
/// growing across restarts. A file is rotated when the next record would take it past
/// `maxFileBytes`, and when the capture detail changes (the snapshot length is a file property).
/// Writes go through libpcap's stdio buffer and are flushed every `flushIntervalNanoseconds` of
/// packet time (and on rotate, disable and close), not per packet. `write` allocates nothing.
///
/// The file is opened lazily by the first packet after enabling or rotating, so a capture that is
/// switched on but sees no traffic leaves no empty file behind.
///
/// `@unchecked Sendable`: one thread at a time (the data-path thread that owns it).
public final class CaptureWriter: @unchecked Sendable {
    /// The capture directory.
    public let directory: String
    /// Largest size of one file; a record that would cross it goes to a new file.
    public var maxFileBytes: Int
    /// Flush at most this often (packet timestamps).
    public var flushIntervalNanoseconds: UInt64

    /// Detail for the files opened from now on. Changing it closes the current file.
    public private(set) var detail: CaptureDetail
    /// Whether `write` records packets.
    public private(set) var isEnabled: Bool

    /// Sequence of the file being written (nil when none is open). `prune` must keep it.
    public private(set) var currentSequence: UInt32?
    /// Packets written since creation.
    public private(set) var packetsWritten: UInt64 = 0
    /// Packets not written because a file could not be opened or flushed.
    public private(set) var failures: UInt64 = 0
    /// The last error (opening or flushing), for the daemon's status and logs.
    public private(set) var lastError: CaptureError?

    private var nextSequence: UInt32
    private var pcap: OpaquePointer?
    private var dumper: OpaquePointer?
    private var offset: UInt64 = 0
    private var packetsInFile = 0
    private var lastFlush: UInt64 = 0
    private var unflushed = false
    private var currentPath = ""
    private var streamBuffer: UnsafeMutablePointer<CChar>?

    /// stdio buffer of the open file (records reach the kernel in writes of this size).
    public static let streamBufferSize = 256 << 10

    /// Size of the pcap global header; the first record starts there.
    public static let fileHeaderSize: UInt64 = 24
    /// Size of a pcap record header.
    public static let recordHeaderSize: UInt64 = 16

    /// A writer for `directory` (created if missing). The first file's sequence is one past the
    /// highest already there.
    public init(directory: String, detail: CaptureDetail = .full, maxFileBytes: Int = 64 << 20,
                flushIntervalNanoseconds: UInt64 = 1_000_000_000, enabled: Bool = true) throws(CaptureError) {
        do { try Sys.mkdirIfMissing(directory, 0o750) } catch { throw .system(error) }
        self.directory = directory
        self.detail = detail
        self.maxFileBytes = maxFileBytes
        self.flushIntervalNanoseconds = flushIntervalNanoseconds
        self.isEnabled = enabled
        nextSequence = try CaptureFiles.nextSequence(directory: directory)
    }

    deinit {
        closeFile()
        streamBuffer?.deallocate()
    }

    /// Turns capture on or off. Off closes (and flushes) the current file.
    public func setEnabled(_ enabled: Bool) {
        isEnabled = enabled
        if !enabled { closeFile() }
    }

    /// Changes the detail; a real change closes the current file so the next packet starts a
    /// file with the new snapshot length.
    public func setDetail(_ newDetail: CaptureDetail) {
        guard newDetail != detail else { return }
        detail = newDetail
        closeFile()
    }

    /// Records one IP packet captured at `timestampNanoseconds` (since the epoch). Returns where
    /// its record is, or nil when capture is off or the file could not be opened (counted in
    /// `failures`, the reason in `lastError`).
    @discardableResult
    public func write(packet: UnsafeRawBufferPointer, timestampNanoseconds: UInt64) -> CaptureLocation? {
        guard isEnabled else { return nil }
        let captured = min(packet.count, Int(detail.snaplen))
        let recordSize = CaptureWriter.recordHeaderSize + UInt64(captured)
        if dumper != nil, packetsInFile > 0, offset + recordSize > UInt64(maxFileBytes) { closeFile() }
        if dumper == nil {
            guard openFile(timestampNanoseconds: timestampNanoseconds) else {
                failures += 1
                return nil
            }
        }
        guard let dumper, let sequence = currentSequence else { return nil }
        var header = pcap_pkthdr()
        header.ts.tv_sec = Int(timestampNanoseconds / 1_000_000_000)
        header.ts.tv_usec = Int(timestampNanoseconds % 1_000_000_000)  // nanoseconds: file is nano-precision
        header.caplen = UInt32(captured)
        header.len = UInt32(packet.count)
        let location = CaptureLocation(fileSequence: sequence, offset: offset)
        if let base = packet.baseAddress {
            pcap_dump(UnsafeMutablePointer<UInt8>(dumper), &header, base.assumingMemoryBound(to: UInt8.self))
        } else {
            var empty: UInt8 = 0
            pcap_dump(UnsafeMutablePointer<UInt8>(dumper), &header, &empty)
        }
        offset += recordSize
        packetsInFile += 1
        packetsWritten += 1
        unflushed = true
        if timestampNanoseconds &- lastFlush >= flushIntervalNanoseconds { flush(now: timestampNanoseconds) }
        return location
    }

    /// Convenience for callers holding an array (tests, tools).
    @discardableResult
    public func write(packet: [UInt8], timestampNanoseconds: UInt64) -> CaptureLocation? {
        packet.withUnsafeBytes { write(packet: $0, timestampNanoseconds: timestampNanoseconds) }
    }

    /// Pushes buffered records to the file now.
    public func flush() { flush(now: lastFlush) }

    private func flush(now: UInt64) {
        lastFlush = now
        guard let dumper, unflushed else { return }
        unflushed = false
        if pcap_dump_flush(dumper) != 0 {
            lastError = .writeFailed(path: currentPath, message: errnoText(errno))
        }
    }

    /// Flushes and closes the current file; the next packet opens a new one.
    public func close() { closeFile() }

    private func openFile(timestampNanoseconds: UInt64) -> Bool {
        let sequence = nextSequence
        let path = directory.hasSuffix("/") ? directory + CaptureFiles.fileName(sequence: sequence)
            : "\(directory)/\(CaptureFiles.fileName(sequence: sequence))"
        guard let pcap = pcap_open_dead_with_tstamp_precision(DLT_RAW, detail.snaplen, UInt32(PCAP_TSTAMP_PRECISION_NANO)) else {
            lastError = .cannotOpen(path: path, message: "pcap_open_dead failed")
            return false
        }
        // Our own FILE with a large buffer (before any I/O on it, as setvbuf requires): one
        // write(2) per `streamBufferSize` bytes instead of one per 4 KiB.
        guard let stream = fopen(path, "we") else {
            lastError = .cannotOpen(path: path, message: errnoText(errno))
            pcap_close(pcap)
            return false
        }
        if streamBuffer == nil { streamBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: CaptureWriter.streamBufferSize) }
        setvbuf(stream, streamBuffer, _IOFBF, CaptureWriter.streamBufferSize)
        guard let dumper = pcap_dump_fopen(pcap, stream) else {
            lastError = .cannotOpen(path: path, message: String(cString: pcap_geterr(pcap)))
            fclose(stream)
            pcap_close(pcap)
            return false
        }
        nextSequence = sequence &+ 1
        self.pcap = pcap
        self.dumper = dumper
        currentSequence = sequence
        currentPath = path
        let position = pcap_dump_ftell64(dumper)
        offset = position > 0 ? UInt64(position) : CaptureWriter.fileHeaderSize
        packetsInFile = 0
        lastFlush = timestampNanoseconds
        return true
    }

    private func closeFile() {
        if let dumper {
            if unflushed, pcap_dump_flush(dumper) != 0 {
                lastError = .writeFailed(path: currentPath, message: errnoText(errno))
            }
            pcap_dump_close(dumper)
        }
        if let pcap { pcap_close(pcap) }
        dumper = nil
        pcap = nil
        unflushed = false
        currentSequence = nil
    }
}
