import Core
import CShims
import Glibc

/// The one layer every system call of tunneld and tunnelctl goes through (in the spirit of
/// swift-system's `Syscalls.swift` and swift-nio's `System.swift`):
///
/// - `EINTR` is retried;
/// - `EAGAIN`/`EWOULDBLOCK` become `nil` in the `…Nonblocking` variants (nothing to do now);
/// - `EBADF` and `EFAULT` are programming errors (a closed or wild descriptor/pointer) and trap;
/// - every other failure throws ``SystemError`` naming the call.
///
/// Two calling conventions are covered: libc style (`-1` and `errno`) and the CShims style (`-errno`).
/// The operation text is an autoclosure, so building it costs nothing on the success path.
public enum Sys {
    /// Runs a libc call that returns -1 and sets `errno` on failure.
    @inline(__always)
    public static func call<T: FixedWidthInteger>(
        _ operation: @autoclosure () -> String, _ body: () -> T
    ) throws(SystemError) -> T {
        while true {
            let r = body()
            if r != -1 { return r }
            let e = Glibc.errno
            if e == EINTR { continue }
            try fail(operation(), e)
        }
    }

    /// Like ``call(_:_:)`` but returns nil for `EAGAIN`/`EWOULDBLOCK`.
    @inline(__always)
    public static func callNonblocking<T: FixedWidthInteger>(
        _ operation: @autoclosure () -> String, _ body: () -> T
    ) throws(SystemError) -> T? {
        while true {
            let r = body()
            if r != -1 { return r }
            let e = Glibc.errno
            if e == EINTR { continue }
            if e == EAGAIN || e == EWOULDBLOCK { return nil }
            try fail(operation(), e)
        }
    }

    /// Runs a CShims call that returns a non-negative value or `-errno`.
    @inline(__always)
    public static func shim(_ operation: @autoclosure () -> String, _ body: () -> Int32) throws(SystemError) -> Int32 {
        while true {
            let r = body()
            if r >= 0 { return r }
            if -r == EINTR { continue }
            try fail(operation(), -r)
        }
    }

    /// Like ``shim(_:_:)`` but returns nil for `EAGAIN`/`EWOULDBLOCK`.
    @inline(__always)
    public static func shimNonblocking(
        _ operation: @autoclosure () -> String, _ body: () -> Int32
    ) throws(SystemError) -> Int32? {
        while true {
            let r = body()
            if r >= 0 { return r }
            if -r == EINTR { continue }
            if -r == EAGAIN || -r == EWOULDBLOCK { return nil }
            try fail(operation(), -r)
        }
    }

    /// Throws `SystemError(operation, e)`, trapping on errors that can only be our own bug.
    public static func fail(_ operation: String, _ e: Int32) throws(SystemError) -> Never {
        precondition(e != EBADF && e != EFAULT, "\(operation): \(SystemError.name(e)) (programming error)")
        throw SystemError(operation, errno: e)
    }

    /// `close(2)`. EINTR is not retried: on Linux the descriptor is released even then.
    public static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    /// `read(2)` into `buffer`; nil when nothing is available on a nonblocking descriptor.
    public static func readNonblocking(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, _ what: @autoclosure () -> String)
        throws(SystemError) -> Int?
    {
        try callNonblocking("read(\(what()))") { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    /// `write(2)` from `buffer`; nil when the descriptor would block.
    public static func writeNonblocking(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, _ what: @autoclosure () -> String)
        throws(SystemError) -> Int?
    {
        try callNonblocking("write(\(what()))") { Glibc.write(fd, buffer.baseAddress, buffer.count) }
    }

    /// `setsockopt(2)` for an integer option.
    public static func setIntOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32, _ what: @autoclosure () -> String)
        throws(SystemError)
    {
        var v = value
        _ = try call("setsockopt(\(what()))") {
            setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    /// `getsockopt(2)` for an integer option.
    public static func intOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ what: @autoclosure () -> String)
        throws(SystemError) -> Int32
    {
        var v: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        _ = try call("getsockopt(\(what()))") { getsockopt(fd, level, name, &v, &len) }
        return v
    }
}

extension Sys {
    /// Moves the calling thread into a new, empty network namespace (root only). For tests that
    /// exercise TUN and rtnetlink for real without touching the host's network; the namespace goes
    /// away when the thread and every descriptor opened in it are gone.
    public static func enterPrivateNetworkNamespace() throws(SystemError) {
        _ = try shim("unshare(CLONE_NEWNET)") { tv_unshare_network() }
    }
}

extension Sys {
    /// The daemon's heap policy (`tv_malloc_tune`): large buffers are always their own mappings, so
    /// the temporaries of a start or reload with thousands of peers leave no resident pages behind.
    /// Once, at start.
    public static func tuneHeap() { _ = tv_malloc_tune() }

    /// Gives free heap pages back to the kernel (`malloc_trim(0)`) after a start or reload that
    /// allocated and freed a lot. Costs a walk of the heap's free lists (milliseconds); not for the
    /// data path.
    public static func trimHeap() { _ = tv_malloc_trim() }
}
