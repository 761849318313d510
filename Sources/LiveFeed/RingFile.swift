import Core
import CShims
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An open, mapped ring file: the one place LiveFeed talks to the kernel. System calls retry
/// `EINTR` and fail with `RingError.system` naming the call and the path.
final class RingFile {
    let path: String
    let fd: Int32
    let base: UnsafeMutableRawPointer
    let length: Int
    let device: UInt64
    let inode: UInt64

    private init(path: String, fd: Int32, base: UnsafeMutableRawPointer, length: Int, device: UInt64, inode: UInt64) {
        self.path = path
        self.fd = fd
        self.base = base
        self.length = length
        self.device = device
        self.inode = inode
    }

    deinit {
        munmap(base, length)
        close(fd)
    }

    // MARK: Header fields

    func u32(_ offset: Int) -> UInt32 { UInt32(littleEndian: base.load(fromByteOffset: offset, as: UInt32.self)) }
    func u64(_ offset: Int) -> UInt64 { UInt64(littleEndian: base.load(fromByteOffset: offset, as: UInt64.self)) }
    func pointer(_ offset: Int) -> UnsafeMutableRawPointer { base + offset }
    var slots: UnsafeMutableRawPointer { base + RingLayout.headerSize }
    var generation: UInt64 { u64(RingLayout.generationOffset) }
    var slotCount: Int { Int(u32(RingLayout.slotCountOffset)) }
    var isClosed: Bool { tv_load_acquire_u32(pointer(RingLayout.stateOffset)) == RingLayout.stateClosed }

    /// Marks the ring closed and wakes any waiting consumer (producer side, on close or replace).
    func markClosedAndWake() {
        tv_store_release_u32(pointer(RingLayout.stateOffset), RingLayout.stateClosed)
        _ = tv_fetch_add_release_u32(pointer(RingLayout.futexOffset), 1)
        _ = tv_futex_wake(pointer(RingLayout.futexOffset), Int32.max)
    }

    // MARK: Opening

    /// Opens and maps an existing ring after checking its header against its size.
    static func attach(path: String) throws(RingError) -> RingFile {
        let fd = try Sys.open(path, O_RDWR | O_CLOEXEC)
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let e = errno
            close(fd)
            throw .system(call: "fstat", errno: e, path: path)
        }
        let size = Int(st.st_size)
        guard size >= RingLayout.headerSize else {
            close(fd)
            throw .truncated(path: path, size: size, expected: RingLayout.headerSize)
        }
        let base: UnsafeMutableRawPointer
        do { base = try Sys.map(fd, length: size, path: path) } catch {
            close(fd)
            throw error
        }
        let file = RingFile(path: path, fd: fd, base: base, length: size, device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
        try validate(header: UnsafeRawPointer(base), fileSize: size, path: path)
        return file
    }

    /// Checks magic, version and geometry of a header against the file size.
    static func validate(header: UnsafeRawPointer, fileSize: Int, path: String) throws(RingError) {
        func u32(_ o: Int) -> UInt32 { UInt32(littleEndian: header.load(fromByteOffset: o, as: UInt32.self)) }
        let magic = tv_load_acquire_u32(header + RingLayout.magicOffset)
        guard UInt32(littleEndian: magic) == RingLayout.magic else { throw .badMagic(path: path, found: UInt32(littleEndian: magic)) }
        let version = u32(RingLayout.versionOffset)
        guard version == RingLayout.version else {
            throw .unsupportedVersion(path: path, found: version, supported: RingLayout.version)
        }
        let headerSize = Int(u32(RingLayout.headerSizeOffset))
        guard headerSize == RingLayout.headerSize else {
            throw .badGeometry(path: path, reason: "header size \(headerSize), expected \(RingLayout.headerSize)")
        }
        let slotSize = Int(u32(RingLayout.slotSizeOffset))
        guard slotSize == RingLayout.slotSize else {
            throw .badGeometry(path: path, reason: "slot size \(slotSize), expected \(RingLayout.slotSize)")
        }
        let slotCount = Int(u32(RingLayout.slotCountOffset))
        guard slotCount >= RingLayout.minimumSlotCount, slotCount <= RingLayout.maximumSlotCount,
              slotCount & (slotCount - 1) == 0 else {
            throw .badGeometry(path: path, reason: "slot count \(slotCount) is not a power of two in \(RingLayout.minimumSlotCount)...\(RingLayout.maximumSlotCount)")
        }
        let expected = RingLayout.fileSize(slotCount: slotCount)
        guard fileSize >= expected else { throw .truncated(path: path, size: fileSize, expected: expected) }
        guard fileSize == expected else {
            throw .badGeometry(path: path, reason: "file is \(fileSize) bytes, \(slotCount) slots need \(expected)")
        }
    }

    /// Creates a new ring at `path` through a temporary file and a rename, so no reader ever maps
    /// a half-initialised header. Returns the mapped new file.
    static func create(path: String, slotCount: Int, generation: UInt64, mode: mode_t) throws(RingError) -> RingFile {
        let temporary = "\(path).tmp.\(getpid())"
        let fd: Int32
        do { fd = try Sys.open(temporary, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, mode: mode) } catch {
            // A missing directory is a creation error, not "the ring does not exist".
            if case .notFound = error { throw .system(call: "open", errno: ENOENT, path: temporary) }
            throw error
        }
        let size = RingLayout.fileSize(slotCount: slotCount)
        func fail(_ call: String, _ e: Int32) -> RingError {
            close(fd)
            unlink(temporary)
            return .system(call: call, errno: e, path: temporary)
        }
        guard fchmod(fd, mode) == 0 else { throw fail("fchmod", errno) }
        guard ftruncate(fd, off_t(size)) == 0 else { throw fail("ftruncate", errno) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw fail("fstat", errno) }
        let base: UnsafeMutableRawPointer
        do { base = try Sys.map(fd, length: size, path: temporary) } catch {
            close(fd)
            unlink(temporary)
            throw error
        }
        let file = RingFile(path: path, fd: fd, base: base, length: size, device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
        // ftruncate gives zeros: head, tail, dropped, futex, state and waiting start at 0.
        func put32(_ o: Int, _ v: UInt32) { base.storeBytes(of: v.littleEndian, toByteOffset: o, as: UInt32.self) }
        func put64(_ o: Int, _ v: UInt64) { base.storeBytes(of: v.littleEndian, toByteOffset: o, as: UInt64.self) }
        put32(RingLayout.versionOffset, RingLayout.version)
        put32(RingLayout.headerSizeOffset, UInt32(RingLayout.headerSize))
        put32(RingLayout.slotSizeOffset, UInt32(RingLayout.slotSize))
        put32(RingLayout.slotCountOffset, UInt32(slotCount))
        put32(RingLayout.flagsOffset, 0)
        put64(RingLayout.generationOffset, generation)
        put32(RingLayout.producerPIDOffset, UInt32(bitPattern: getpid()))
        put64(RingLayout.creationTimeOffset, Clock.realtimeNanoseconds())
        tv_store_release_u32(base + RingLayout.magicOffset, RingLayout.magic.littleEndian)
        guard rename(temporary, path) == 0 else {
            let e = errno
            unlink(temporary)
            throw .system(call: "rename", errno: e, path: path)
        }
        return file
    }
}

/// Thin system-call wrappers (EINTR retried).
enum Sys {
    static func open(_ path: String, _ flags: Int32, mode: mode_t = 0) throws(RingError) -> Int32 {
        while true {
            let fd = Glibc.open(path, flags, mode)
            if fd >= 0 { return fd }
            let e = errno
            if e == EINTR { continue }
            if e == ENOENT { throw .notFound(path: path) }
            throw .system(call: "open", errno: e, path: path)
        }
    }

    static func map(_ fd: Int32, length: Int, path: String) throws(RingError) -> UnsafeMutableRawPointer {
        guard let p = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), p != MAP_FAILED else {
            throw .system(call: "mmap", errno: errno, path: path)
        }
        return p
    }

    /// `stat` of a path: (device, inode), nil when it does not exist.
    static func identity(_ path: String) -> (device: UInt64, inode: UInt64)? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return (UInt64(st.st_dev), UInt64(st.st_ino))
    }
}

/// Clock readings (the only clock LiveFeed reads; records carry the caller's time).
enum Clock {
    static func realtimeNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    static func monotonicNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    static func sleep(nanoseconds: UInt64) {
        var ts = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&ts, &remaining) != 0 && errno == EINTR { ts = remaining }
    }
}
