import Glibc

/// File, mapping and sleep calls for the modules above the data path (Control, LiveFeed, Capture,
/// Store, Gateway), with the conventions of ``Sys``: EINTR retried, failures thrown as
/// ``SystemError`` naming the call and its operand, e.g. `open(/run/tv/live.ring): …`.
extension Sys {
    /// `open(2)`.
    public static func open(_ path: String, _ flags: Int32, mode: mode_t = 0) throws(SystemError) -> Int32 {
        try call("open(\(path))") { Glibc.open(path, flags, mode) }
    }

    /// `read(2)` into `buffer` (blocking descriptor); 0 at end of file.
    public static func read(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, _ what: @autoclosure () -> String)
        throws(SystemError) -> Int
    {
        try call("read(\(what()))") { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    /// The whole content of the file at `path` (read to end of file, so also `/proc` files whose
    /// size says 0), at most `limit` bytes.
    public static func readFile(_ path: String, limit: Int = 1 << 20) throws(SystemError) -> [UInt8] {
        let fd = try open(path, O_RDONLY | O_CLOEXEC)
        defer { close(fd) }
        var out: [UInt8] = []
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
        defer { chunk.deallocate() }
        while out.count < limit {
            let n = try read(fd, chunk, path)
            if n == 0 { break }
            out += UnsafeRawBufferPointer(rebasing: chunk[0..<min(n, limit - out.count)])
        }
        return out
    }

    /// `write(2)` of all of `buffer` (blocking descriptor), looping over short writes.
    public static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, _ what: @autoclosure () -> String)
        throws(SystemError)
    {
        var done = 0
        while done < buffer.count {
            let n = try call("write(\(what()))") { Glibc.write(fd, buffer.baseAddress! + done, buffer.count - done) }
            if n == 0 { throw SystemError("write(\(what()))", errno: EIO) }
            done += n
        }
    }

    /// `fstat(2)`.
    public static func fstat(_ fd: Int32, _ what: @autoclosure () -> String) throws(SystemError) -> Glibc.stat {
        var st = Glibc.stat()
        _ = try call("fstat(\(what()))") { Glibc.fstat(fd, &st) }
        return st
    }

    /// `stat(2)`.
    public static func stat(_ path: String) throws(SystemError) -> Glibc.stat {
        var st = Glibc.stat()
        _ = try call("stat(\(path))") { statPath(path, &st) }
        return st
    }

    /// `lstat(2)`.
    public static func lstat(_ path: String) throws(SystemError) -> Glibc.stat {
        var st = Glibc.stat()
        _ = try call("lstat(\(path))") { Glibc.lstat(path, &st) }
        return st
    }

    /// `stat(2)` for callers that only ask "is it there, and what is it": nil on any failure.
    public static func statIfPresent(_ path: String) -> Glibc.stat? {
        try? stat(path)
    }

    /// `ftruncate(2)`.
    public static func ftruncate(_ fd: Int32, _ length: Int, _ what: @autoclosure () -> String) throws(SystemError) {
        _ = try call("ftruncate(\(what()))") { Glibc.ftruncate(fd, off_t(length)) }
    }

    /// `fchmod(2)`.
    public static func fchmod(_ fd: Int32, _ mode: mode_t, _ what: @autoclosure () -> String) throws(SystemError) {
        _ = try call("fchmod(\(what()))") { Glibc.fchmod(fd, mode) }
    }

    /// `chmod(2)`.
    public static func chmod(_ path: String, _ mode: mode_t) throws(SystemError) {
        _ = try call("chmod(\(path))") { Glibc.chmod(path, mode) }
    }

    /// `chown(2)` of the group only.
    public static func chgrp(_ path: String, _ gid: gid_t) throws(SystemError) {
        _ = try call("chown(\(path))") { Glibc.chown(path, uid_t.max, gid) }
    }

    /// `rename(2)`.
    public static func rename(_ from: String, _ to: String) throws(SystemError) {
        _ = try call("rename(\(from))") { Glibc.rename(from, to) }
    }

    /// `unlink(2)`; a file that is already gone is not an error.
    public static func unlinkIfPresent(_ path: String) throws(SystemError) {
        do {
            _ = try call("unlink(\(path))") { Glibc.unlink(path) }
        } catch where error.errno == ENOENT {}
    }

    /// `mkdir(2)`; an existing entry of that name is not an error (callers that care `stat` it).
    public static func mkdirIfMissing(_ path: String, _ mode: mode_t) throws(SystemError) {
        do {
            _ = try call("mkdir(\(path))") { Glibc.mkdir(path, mode) }
        } catch where error.errno == EEXIST {}
    }

    /// The names in directory `path` (`opendir(3)`/`readdir(3)`), without `.` and `..`, in
    /// directory order.
    public static func directoryEntries(_ path: String) throws(SystemError) -> [String] {
        guard let dir = opendir(path) else {
            let e = Glibc.errno
            throw SystemError("opendir(\(path))", errno: e)
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// `access(2)` with `F_OK`: whether `path` exists (for the caller's purposes).
    public static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    /// `flock(2)` with `LOCK_NB`: false when another descriptor holds a conflicting lock.
    public static func tryLock(_ fd: Int32, _ operation: Int32, _ what: @autoclosure () -> String) throws(SystemError) -> Bool {
        try callNonblocking("flock(\(what()))") { flockDescriptor(fd, operation | LOCK_NB) } != nil
    }

    /// `mmap(2)` of `length` bytes of `fd`, shared, read-write.
    public static func mapShared(_ fd: Int32, length: Int, _ what: @autoclosure () -> String) throws(SystemError)
        -> UnsafeMutableRawPointer
    {
        guard let p = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), p != MAP_FAILED else {
            let e = Glibc.errno
            throw SystemError("mmap(\(what()))", errno: e)
        }
        return p
    }

    /// `munmap(2)`; fails only for a bad range, which is our bug.
    public static func unmap(_ base: UnsafeMutableRawPointer, length: Int) {
        _ = munmap(base, length)
    }

    /// Sleeps `nanoseconds` on the monotonic clock (`nanosleep(2)`, resumed after a signal).
    /// The one plain sleep: pacing and back-off only — a thread waiting for *something* waits on a
    /// ``ConditionLock``, a ``StopSignal``, `poll` (``Readiness``) or the ring's futex instead.
    public static func sleep(nanoseconds: UInt64) {
        var ts = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&ts, &remaining) != 0 && Glibc.errno == EINTR { ts = remaining }
    }

    /// ``sleep(nanoseconds:)`` in milliseconds.
    public static func sleep(milliseconds: Int) {
        sleep(nanoseconds: UInt64(max(0, milliseconds)) &* 1_000_000)
    }
}

// File-scope forwarders: inside `extension Sys` the names `stat` and `flock` find the wrappers
// above and Glibc's structs of the same names before Glibc's functions.
private func statPath(_ path: String, _ st: inout Glibc.stat) -> Int32 { stat(path, &st) }
private func flockDescriptor(_ fd: Int32, _ operation: Int32) -> Int32 { flock(fd, operation) }

extension Sys {
    /// Writes all of `text` to `fd` (standard output or error). A reader that went away (`EPIPE`,
    /// seen when SIGPIPE is ignored) ends the process as SIGPIPE would have; other errors are
    /// dropped, as there is nowhere left to report them.
    public static func writeText(_ fd: Int32, _ text: String) {
        var t = text
        t.withUTF8 { bytes in
            do throws(SystemError) {
                try writeAll(fd, UnsafeRawBufferPointer(bytes), "fd \(fd)")
            } catch where error.errno == EPIPE {
                signal(SIGPIPE, SIG_DFL)
                raise(SIGPIPE)
            } catch {}
        }
    }
}
