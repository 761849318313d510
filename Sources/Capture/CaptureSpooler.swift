import Core
import CPcap
import Runtime
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The daemon's capture writer: the same files as `CaptureWriter` (rotated `capture-NNNNNN.pcap`,
/// raw IP, nanosecond timestamps, snaplen by detail), but the data path never does file I/O.
///
/// `write` (data-path thread, allocation-free after warm-up) lays the 16-byte pcap record header
/// and the packet bytes into an in-memory chunk (1 MiB) and returns the record's location at once:
/// rotation and offsets are decided here, by size, exactly as the file will be laid out. Full
/// chunks — and the partial one at each `flush()` — go through a queue (a `ConditionLock` held only
/// to append) to a spool thread (a `WorkerThread`), which creates each file with libpcap
/// (`pcap_open_dead_with_tstamp_precision(DLT_RAW, snaplen, NANO)` + `pcap_dump_fopen`, so libpcap
/// writes the global header) and appends the chunks' records to it. When no chunk is free (the
/// disk is slower than the traffic) the packet is not captured and is counted in `dropped`; the
/// data path never waits. Chunks are allocated on demand, at most `maxChunks`.
///
/// `@unchecked Sendable`: `write`, `setEnabled`, `setDetail`, `flush`, `close` and the data-path
/// state belong to one thread at a time (the caller's lock); the queue and counters shared with
/// the spool thread are behind `lock`/atomics.
public final class CaptureSpooler: @unchecked Sendable {
    /// A run of complete pcap records for one file.
    /// `@unchecked Sendable`: owned by one side at a time — the data path while it fills it, the
    /// queue, then the spool thread while it writes it — and handed over under the queue's mutex.
    final class Chunk: @unchecked Sendable {
        let bytes: UnsafeMutableRawPointer
        let capacity: Int
        var used = 0
        var sequence: UInt32 = 0
        /// The file starts with this chunk: open it with this snaplen.
        var opensFile = false
        var snaplen: Int32 = 0
        /// Close the file after this chunk.
        var closesFile = false

        init(capacity: Int) {
            self.capacity = capacity
            bytes = .allocate(byteCount: capacity, alignment: 16)
        }
        deinit { bytes.deallocate() }

        func reset() {
            used = 0
            opensFile = false
            closesFile = false
        }
    }

    struct Queue {
        var full: [Chunk] = []
        var free: [Chunk] = []
        var allocated = 0
        var stopping = false
        var busy = false
    }

    /// The capture directory.
    public let directory: String
    /// Largest size of one file.
    public let maxFileBytes: Int
    /// Bytes per chunk (one spool write).
    public let chunkBytes: Int
    /// Most chunks in memory (bounds the backlog: `maxChunks × chunkBytes`).
    public let maxChunks: Int
    /// Detail for the files started from now on.
    public private(set) var detail: CaptureDetail
    /// Whether `write` records packets.
    public private(set) var isEnabled: Bool
    /// Sequence of the file being filled (nil when none); pruning must keep it.
    public private(set) var currentSequence: UInt32?
    /// Packets laid out for writing since creation.
    public private(set) var packetsWritten: UInt64 = 0
    /// Packets not captured because every chunk was waiting for the disk.
    public private(set) var dropped: UInt64 = 0

    private var nextSequence: UInt32
    private var offset: UInt64 = 0
    private var packetsInFile = 0
    private var chunk: Chunk?
    /// Guards `queue`; the spool thread sleeps on it for work, `sync()` for the queue to drain.
    private let lock = ConditionLock()
    private var queue = Queue()
    private let failureCount = Atomic<UInt64>(0)
    private let errorText = Mutex<CaptureError?>(nil)
    private var thread: WorkerThread?

    /// A spooler for `directory` (created if missing); the first file's sequence is one past the
    /// highest already there. Starts the spool thread.
    public init(directory: String, detail: CaptureDetail = .full, maxFileBytes: Int = 64 << 20,
                enabled: Bool = true, chunkBytes: Int = 1 << 20, maxChunks: Int = 16) throws(CaptureError) {
        do { try Sys.mkdirIfMissing(directory, 0o750) } catch { throw .system(error) }
        self.directory = directory
        self.detail = detail
        self.maxFileBytes = maxFileBytes
        self.isEnabled = enabled
        self.chunkBytes = max(chunkBytes, Int(CaptureDetail.full.snaplen) + 16)
        self.maxChunks = max(2, maxChunks)
        nextSequence = try CaptureFiles.nextSequence(directory: directory)
        // Unretained: the spooler's `close()` (also from `deinit`) joins the thread.
        thread = WorkerThread(name: "tv-spool") { [unowned(unsafe) self] in self.spool() }
    }

    deinit { close() }

    /// Files that could not be created or written (the spool thread's count).
    public var failures: UInt64 { failureCount.load(ordering: .relaxed) }
    /// The spool thread's last error.
    public var lastError: CaptureError? { errorText.withLock { $0 } }

    /// Turns capture on or off. Off ends the current file.
    public func setEnabled(_ enabled: Bool) {
        isEnabled = enabled
        if !enabled { endFile() }
    }

    /// Changes the detail; a real change ends the current file (the snaplen is per file).
    public func setDetail(_ newDetail: CaptureDetail) {
        guard newDetail != detail else { return }
        detail = newDetail
        endFile()
    }

    /// Lays out one IP packet captured at `timestampNanoseconds` and returns where its record
    /// will be; nil when capture is off or no chunk is free (counted in `dropped`).
    @discardableResult
    public func write(packet: UnsafeRawBufferPointer, timestampNanoseconds: UInt64) -> CaptureLocation? {
        guard isEnabled else { return nil }
        let captured = min(packet.count, Int(detail.snaplen))
        let recordSize = 16 + captured
        if currentSequence != nil, packetsInFile > 0, offset + UInt64(recordSize) > UInt64(maxFileBytes) { endFile() }
        if chunk == nil || chunk!.used + recordSize > chunk!.capacity {
            guard let fresh = takeChunk() else {
                dropped &+= 1
                return nil
            }
            if let full = chunk { submit(full) }
            chunk = fresh
            if currentSequence == nil {
                currentSequence = nextSequence
                nextSequence &+= 1
                offset = 24
                packetsInFile = 0
                fresh.opensFile = true
                fresh.snaplen = detail.snaplen
            }
            fresh.sequence = currentSequence!
        }
        let c = chunk!
        let at = c.bytes + c.used
        // struct pcap_sf_pkthdr in host byte order, as pcap_dump writes it (nanosecond file).
        at.storeBytes(of: UInt32(truncatingIfNeeded: timestampNanoseconds / 1_000_000_000), as: UInt32.self)
        (at + 4).storeBytes(of: UInt32(timestampNanoseconds % 1_000_000_000), as: UInt32.self)
        (at + 8).storeBytes(of: UInt32(captured), as: UInt32.self)
        (at + 12).storeBytes(of: UInt32(truncatingIfNeeded: packet.count), as: UInt32.self)
        if captured > 0 { (at + 16).copyMemory(from: packet.baseAddress!, byteCount: captured) }
        c.used += recordSize
        let location = CaptureLocation(fileSequence: currentSequence!, offset: offset)
        offset += UInt64(recordSize)
        packetsInFile += 1
        packetsWritten &+= 1
        return location
    }

    /// Convenience for callers holding an array (tests, tools).
    @discardableResult
    public func write(packet: [UInt8], timestampNanoseconds: UInt64) -> CaptureLocation? {
        packet.withUnsafeBytes { write(packet: $0, timestampNanoseconds: timestampNanoseconds) }
    }

    /// Hands the partly filled chunk to the spool thread (call about once a second), so a reader
    /// sees the records within about that long.
    public func flush() {
        if let c = chunk, c.used > 0 || c.opensFile {
            chunk = nil
            submit(c)
        }
    }

    /// Flushes, waits until everything handed over is on disk (tests, shutdown).
    public func sync() {
        flush()
        lock.withLock {
            while !queue.full.isEmpty || queue.busy { lock.wait() }
        }
    }

    /// Ends the current file, writes everything out and stops the spool thread.
    public func close() {
        guard let t = thread else { return }
        endFile()
        lock.withLock {
            queue.stopping = true
            lock.broadcast()
        }
        t.join()
        thread = nil
    }

    // MARK: data-path side

    private func endFile() {
        guard currentSequence != nil else { return }
        let c = chunk ?? takeChunk(force: true)!
        chunk = nil
        c.sequence = currentSequence!
        c.closesFile = true
        submit(c)
        currentSequence = nil
    }

    private func takeChunk(force: Bool = false) -> Chunk? {
        let (c, allocate): (Chunk?, Bool) = lock.withLock {
            if let c = queue.free.popLast() { return (c, false) }
            if queue.allocated < maxChunks || force {
                queue.allocated += 1
                return (nil, true)
            }
            return (nil, false)
        }
        if let c {
            c.reset()
            return c
        }
        return allocate ? Chunk(capacity: chunkBytes) : nil
    }

    private func submit(_ c: Chunk) {
        lock.withLock {
            queue.full.append(c)
            lock.broadcast()  // one condition for two kinds of waiter: the spool thread and sync()
        }
    }

    // MARK: spool thread

    private func spool() {
        var pcap: OpaquePointer? = nil
        var dumper: OpaquePointer? = nil
        var openSequence: UInt32 = 0
        func closeFile() {
            if let d = dumper { pcap_dump_close(d) }
            if let p = pcap { pcap_close(p) }
            dumper = nil
            pcap = nil
        }
        func fail(_ e: CaptureError) {
            failureCount.add(1, ordering: .relaxed)
            errorText.withLock { $0 = e }
        }
        while true {
            let next: Chunk? = lock.withLock {
                while queue.full.isEmpty && !queue.stopping { lock.wait() }
                if queue.full.isEmpty { return nil }  // stopping, and everything is written
                queue.busy = true
                return queue.full.removeFirst()
            }
            guard let c = next else { break }
            if c.opensFile {
                closeFile()
                let path = "\(directory)/\(CaptureFiles.fileName(sequence: c.sequence))"
                if let p = pcap_open_dead_with_tstamp_precision(DLT_RAW, c.snaplen, UInt32(PCAP_TSTAMP_PRECISION_NANO)),
                   let f = fopen(path, "we")
                {
                    pcap = p
                    dumper = pcap_dump_fopen(p, f)
                    if dumper == nil {
                        fail(.cannotOpen(path: path, message: String(cString: pcap_geterr(p))))
                        fclose(f)
                    } else {
                        openSequence = c.sequence
                    }
                } else {
                    fail(.cannotOpen(path: path, message: errnoText(errno)))
                }
            }
            if let d = dumper, openSequence == c.sequence {
                if c.used > 0, fwrite(c.bytes, 1, c.used, pcap_dump_file(d)) != c.used {
                    fail(.writeFailed(path: "\(directory)/\(CaptureFiles.fileName(sequence: c.sequence))",
                                      message: errnoText(errno)))
                }
                if c.closesFile {
                    closeFile()
                } else if pcap_dump_flush(d) != 0 {
                    fail(.writeFailed(path: "\(directory)/\(CaptureFiles.fileName(sequence: c.sequence))",
                                      message: errnoText(errno)))
                }
            }
            lock.withLock {
                queue.free.append(c)
                queue.busy = false
                lock.broadcast()
            }
        }
        closeFile()
    }
}
