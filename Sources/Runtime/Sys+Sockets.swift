import Glibc

/// Socket calls for the control and UAPI sockets (Control) with the conventions of ``Sys``.
extension Sys {
    /// `socket(2)` with `SOCK_CLOEXEC`.
    public static func socket(_ domain: Int32, _ type: Int32, _ what: @autoclosure () -> String) throws(SystemError) -> Int32 {
        try call("socket(\(what()))") { Glibc.socket(domain, type | Int32(SOCK_CLOEXEC.rawValue), 0) }
    }

    /// `bind(2)` to `address` (a `sockaddr_in`, `sockaddr_un`, …).
    public static func bind<Address>(_ fd: Int32, _ address: Address, _ what: @autoclosure () -> String) throws(SystemError) {
        var address = address
        _ = try call("bind(\(what()))") {
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<Address>.size)) }
            }
        }
    }

    /// `connect(2)` to `address`.
    public static func connect<Address>(_ fd: Int32, _ address: Address, _ what: @autoclosure () -> String) throws(SystemError) {
        var address = address
        _ = try call("connect(\(what()))") {
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<Address>.size)) }
            }
        }
    }

    /// `listen(2)`.
    public static func listen(_ fd: Int32, backlog: Int32, _ what: @autoclosure () -> String) throws(SystemError) {
        _ = try call("listen(\(what()))") { Glibc.listen(fd, backlog) }
    }

    /// `accept(2)`, the new descriptor set close-on-exec; nil when no connection is pending on a
    /// nonblocking socket.
    public static func accept(_ fd: Int32, _ what: @autoclosure () -> String) throws(SystemError) -> Int32? {
        guard let c = try callNonblocking("accept(\(what()))", { Glibc.accept(fd, nil, nil) }) else { return nil }
        _ = fcntl(c, F_SETFD, FD_CLOEXEC)
        return c
    }

    /// `poll(2)` on one descriptor: true when one of `events` (or an error/hang-up) is pending,
    /// false when `timeoutMilliseconds` passed (-1 = forever).
    public static func poll(_ fd: Int32, events: Int16, timeoutMilliseconds: Int32, _ what: @autoclosure () -> String)
        throws(SystemError) -> Bool
    {
        var p = pollfd(fd: fd, events: events, revents: 0)
        return try call("poll(\(what()))") { Glibc.poll(&p, 1, timeoutMilliseconds) } > 0
    }

    /// `recv(2)` with `MSG_DONTWAIT`; nil when nothing is there yet, 0 when the peer closed.
    public static func receiveNonblocking(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, _ what: @autoclosure () -> String)
        throws(SystemError) -> Int?
    {
        try callNonblocking("recv(\(what()))") { recv(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT)) }
    }

    /// `send(2)` with `MSG_DONTWAIT | MSG_NOSIGNAL` (a closed peer is `EPIPE`, not `SIGPIPE`);
    /// nil when the socket buffer is full.
    public static func sendNonblocking(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, _ what: @autoclosure () -> String)
        throws(SystemError) -> Int?
    {
        try callNonblocking("send(\(what()))") {
            send(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
        }
    }

    /// `shutdown(2)`.
    public static func shutdown(_ fd: Int32, _ how: Int32, _ what: @autoclosure () -> String) throws(SystemError) {
        _ = try call("shutdown(\(what()))") { Glibc.shutdown(fd, how) }
    }
}
