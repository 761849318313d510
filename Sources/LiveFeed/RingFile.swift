import Core
import CShims
import Glibc
import Runtime

/// An open, mapped ring file: the one place LiveFeed talks to the kernel, through `Sys`
/// (`EINTR` retried; a failure is `RingError.system` with the `SystemError` naming call and path).
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
        Sys.unmap(base, length: length)
        Sys.close(fd)
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
        let fd: Int32
        do {
            fd = try Sys.open(path, O_RDWR | O_CLOEXEC)
        } catch where error.errno == ENOENT {
            throw .notFound(path: path)
        } catch {
            throw .system(error)
        }
        let st: stat
        do { st = try Sys.fstat(fd, path) } catch {
            Sys.close(fd)
            throw .system(error)
        }
        let size = Int(st.st_size)
        guard size >= RingLayout.headerSize else {
            Sys.close(fd)
            throw .truncated(path: path, size: size, expected: RingLayout.headerSize)
        }
        let base: UnsafeMutableRawPointer
        do { base = try Sys.mapShared(fd, length: size, path) } catch {
            Sys.close(fd)
            throw .system(error)
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
        // A missing directory is a creation error (.system), not "the ring does not exist".
        let fd: Int32
        do { fd = try Sys.open(temporary, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, mode: mode) } catch { throw .system(error) }
        let size = RingLayout.fileSize(slotCount: slotCount)
        let st: stat
        let base: UnsafeMutableRawPointer
        do {
            try Sys.fchmod(fd, mode, temporary)
            try Sys.ftruncate(fd, size, temporary)
            st = try Sys.fstat(fd, temporary)
            base = try Sys.mapShared(fd, length: size, temporary)
        } catch {
            Sys.close(fd)
            try? Sys.unlinkIfPresent(temporary)
            throw .system(error)
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
        put64(RingLayout.creationTimeOffset, UInt64(clamping: SystemClock().wallNanoseconds()))
        tv_store_release_u32(base + RingLayout.magicOffset, RingLayout.magic.littleEndian)
        do { try Sys.rename(temporary, path) } catch {
            try? Sys.unlinkIfPresent(temporary)
            throw .system(error)
        }
        return file
    }
}

extension RingFile {
    /// `stat` of a path: (device, inode), nil when it does not exist.
    static func identity(_ path: String) -> (device: UInt64, inode: UInt64)? {
        Sys.statIfPresent(path).map { (UInt64($0.st_dev), UInt64($0.st_ino)) }
    }
}
