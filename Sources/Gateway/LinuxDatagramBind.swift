import CShims
import Glibc
import Packet
import Synchronization

/// The Linux UDP bind: one IPv4 socket and one IPv6 socket (`IPV6_V6ONLY`) on the same port,
/// nonblocking, with large socket buffers, moving whole batches with `recvmmsg(2)`/`sendmmsg(2)`.
///
/// Socket buffers matter more than anything else for small-packet throughput (a full receive buffer
/// is where wireguard-go loses packets): the bind asks for `bufferBytes` with `SO_RCVBUFFORCE`/
/// `SO_SNDBUFFORCE` (CAP_NET_ADMIN, ignores `net.core.rmem_max`), falls back to `SO_RCVBUF`/
/// `SO_SNDBUF` (capped by `rmem_max`/`wmem_max`), and reports what the kernel granted in
/// ``buffers``.
public final class LinuxDatagramBind: DatagramBind {
    /// The bound port.
    public let port: UInt16
    /// The IPv4 socket, or -1 when IPv4 is not bound.
    public let ipv4Descriptor: Int32
    /// The IPv6 socket, or -1 when IPv6 is not bound (not requested, or IPv6 disabled on the host).
    public let ipv6Descriptor: Int32
    /// Socket buffer sizes the kernel granted (as `getsockopt` reports them: twice the request).
    public let buffers: BufferReport

    /// What the kernel granted for the socket buffers.
    public struct BufferReport: Sendable, Equatable, CustomStringConvertible {
        /// `SO_RCVBUF` after setting it (bytes; the kernel doubles the request for bookkeeping).
        public var receive: Int
        /// `SO_SNDBUF` after setting it.
        public var send: Int
        /// True when the `…FORCE` options worked (the process has CAP_NET_ADMIN).
        public var forced: Bool
        public var description: String {
            "receive buffer \(receive) B, send buffer \(send) B\(forced ? " (forced)" : " (capped by net.core.rmem_max/wmem_max)")"
        }
    }

    private let shutdown: EventNotifier
    private let closed = Atomic<Bool>(false)
    private let receiveTurn = Atomic<Int>(0)
    /// Datagrams dropped on receive because they did not fit a slot.
    public let truncatedReceives = Atomic<UInt64>(0)
    /// Datagrams the kernel refused on send (consumed and dropped).
    public let failedSends = Atomic<UInt64>(0)
    /// The errno of the last refused send (0 = none), for diagnostics.
    public let lastSendErrno = Atomic<Int32>(0)

    /// Binds `port` (0 = an ephemeral port, the same on both families) on `ipv4` and `ipv6`
    /// (wildcard by default; nil leaves that family out).
    public init(
        port: UInt16, bufferBytes: Int = 8 << 20,
        ipv4: IPAddress? = IPAddress(v4: 0), ipv6: IPAddress? = IPAddress(v6High: 0, low: 0)
    ) throws(SystemError) {
        var attempt = 0
        while true {
            attempt += 1
            var v4: Int32 = -1
            var v6: Int32 = -1
            do {
                var bound = port
                if let a = ipv4 {
                    v4 = try LinuxDatagramBind.openSocket(UDPEndpoint(address: a, port: bound))
                    bound = try LinuxDatagramBind.localPort(v4)
                }
                if let a = ipv6 {
                    do {
                        v6 = try LinuxDatagramBind.openSocket(UDPEndpoint(address: a, port: bound))
                        bound = try LinuxDatagramBind.localPort(v6)
                    } catch where error.errno == EAFNOSUPPORT && ipv4 != nil {
                        v6 = -1  // IPv6 disabled on this host: carry on with IPv4 alone.
                    }
                }
                var report = BufferReport(receive: 0, send: 0, forced: true)
                for fd in [v4, v6] where fd >= 0 {
                    let r = try LinuxDatagramBind.sizeBuffers(fd, bufferBytes)
                    report = BufferReport(
                        receive: report.receive == 0 ? r.receive : min(report.receive, r.receive),
                        send: report.send == 0 ? r.send : min(report.send, r.send),
                        forced: report.forced && r.forced)
                }
                shutdown = try EventNotifier()
                ipv4Descriptor = v4
                ipv6Descriptor = v6
                self.port = bound
                buffers = report
                return
            } catch {
                if v4 >= 0 { Sys.close(v4) }
                if v6 >= 0 { Sys.close(v6) }
                // An ephemeral IPv4 port can be taken on IPv6: pick another (like wireguard-go).
                if port == 0 && error.errno == EADDRINUSE && attempt < 100 { continue }
                throw error
            }
        }
    }

    deinit {
        if ipv4Descriptor >= 0 { Sys.close(ipv4Descriptor) }
        if ipv6Descriptor >= 0 { Sys.close(ipv6Descriptor) }
    }

    private static func openSocket(_ local: UDPEndpoint) throws(SystemError) -> Int32 {
        let family = local.address.isIPv6 ? AF_INET6 : AF_INET
        let what = "UDP \(local)"
        let fd = try Sys.call("socket(\(what))") {
            socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        do {
            if local.address.isIPv6 {
                try Sys.setIntOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 1, "IPV6_V6ONLY")
            }
            var (storage, length) = local.sockaddrStorage
            _ = try withUnsafePointer(to: &storage) { (p) throws(SystemError) -> Int32 in
                try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { (sa) throws(SystemError) -> Int32 in
                    try Sys.call("bind(\(what))") { bind(fd, sa, length) }
                }
            }
            return fd
        } catch {
            Sys.close(fd)
            throw error
        }
    }

    private static func localPort(_ fd: Int32) throws(SystemError) -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let endpoint = try withUnsafeMutablePointer(to: &storage) { (p) throws(SystemError) -> UDPEndpoint? in
            try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { (sa) throws(SystemError) -> UDPEndpoint? in
                _ = try Sys.call("getsockname") { getsockname(fd, sa, &length) }
                return UDPEndpoint(sockaddr: UnsafeRawPointer(sa))
            }
        }
        return endpoint?.port ?? 0
    }

    private static func sizeBuffers(_ fd: Int32, _ bytes: Int) throws(SystemError) -> BufferReport {
        let request = Int32(clamping: bytes)
        var forced = true
        for (force, plain, name) in [(SO_RCVBUFFORCE, SO_RCVBUF, "SO_RCVBUF"), (SO_SNDBUFFORCE, SO_SNDBUF, "SO_SNDBUF")] {
            do {
                try Sys.setIntOption(fd, SOL_SOCKET, force, request, "\(name)FORCE")
            } catch where error.errno == EPERM {
                forced = false
                try Sys.setIntOption(fd, SOL_SOCKET, plain, request, name)
            }
        }
        return BufferReport(
            receive: Int(try Sys.intOption(fd, SOL_SOCKET, SO_RCVBUF, "SO_RCVBUF")),
            send: Int(try Sys.intOption(fd, SOL_SOCKET, SO_SNDBUF, "SO_SNDBUF")),
            forced: forced)
    }

    // MARK: receive

    public func receive(into batch: PacketBatch) throws(SystemError) -> Int {
        batch.count = 0
        if closed.load(ordering: .relaxed) { return 0 }
        // Alternate which family goes first so a flood on one cannot starve the other.
        let v6First = receiveTurn.wrappingAdd(1, ordering: .relaxed).oldValue & 1 == 1
        let order = v6First ? (ipv6Descriptor, ipv4Descriptor) : (ipv4Descriptor, ipv6Descriptor)
        var n = 0
        if order.0 >= 0 { n += try receive(order.0, batch, at: n) }
        if order.1 >= 0 && n < batch.capacity { n += try receive(order.1, batch, at: n) }
        batch.count = n
        return n
    }

    /// recvmmsg into slots `start...`; returns the number of datagrams kept (truncated ones removed).
    private func receive(_ fd: Int32, _ batch: PacketBatch, at start: Int) throws(SystemError) -> Int {
        let room = batch.capacity - start
        for i in start..<batch.capacity {
            let r = batch.readRoom(i)
            batch.iovecs[i] = iovec(iov_base: r.baseAddress, iov_len: r.count)
            withUnsafeMutablePointer(to: &batch.iovecs[i]) { iov in
                batch.messages[i].msg_hdr = msghdr(
                    msg_name: UnsafeMutableRawPointer(batch.addresses.baseAddress! + i),
                    msg_namelen: socklen_t(MemoryLayout<sockaddr_storage>.size),
                    msg_iov: iov, msg_iovlen: 1, msg_control: nil, msg_controllen: 0, msg_flags: 0)
            }
            batch.messages[i].msg_len = 0
        }
        guard
            let got = try Sys.shimNonblocking("recvmmsg(UDP port \(port))", {
                tv_recvmmsg(fd, batch.messages.baseAddress! + start, UInt32(room), Int32(MSG_DONTWAIT))
            })
        else { return 0 }
        var kept = 0
        var truncated: UInt64 = 0
        for k in 0..<Int(got) {
            let i = start + k
            let message = batch.messages[i]
            guard message.msg_hdr.msg_flags & Int32(MSG_TRUNC) == 0,
                let source = UDPEndpoint(sockaddr: UnsafeRawPointer(batch.addresses.baseAddress! + i))
            else {
                truncated += 1
                continue
            }
            let target = start + kept
            if target != i {
                // Rare (only after a dropped datagram): move the data down to keep slots contiguous.
                batch.readRoom(target).baseAddress!.copyMemory(
                    from: batch.readRoom(i).baseAddress!, byteCount: Int(message.msg_len))
            }
            batch.offsets[target] = batch.headroom
            batch.lengths[target] = Int(message.msg_len)
            batch.endpoints[target] = source
            kept += 1
        }
        if truncated > 0 { truncatedReceives.add(truncated, ordering: .relaxed) }
        return kept
    }

    // MARK: send

    public func send(_ batch: PacketBatch, from start: Int) throws(SystemError) -> Int {
        if closed.load(ordering: .relaxed) { return 0 }
        var i = start
        while i < batch.count {
            // A run of slots of one family goes out in one sendmmsg.
            let v6 = batch.endpoints[i].address.isIPv6
            var end = i
            while end < batch.count && batch.endpoints[end].address.isIPv6 == v6 {
                prepareSend(batch, end)
                end += 1
            }
            let fd = v6 ? ipv6Descriptor : ipv4Descriptor
            while i < end {
                if fd < 0 {
                    refuse(end - i, EAFNOSUPPORT)
                    i = end
                    break
                }
                let r = tv_sendmmsg(fd, batch.messages.baseAddress! + i, UInt32(end - i), Int32(MSG_DONTWAIT))
                if r > 0 {
                    i += Int(r)
                    continue
                }
                let e: Int32 = r == 0 ? EAGAIN : -r
                switch e {
                case EINTR:
                    continue
                case EAGAIN, EWOULDBLOCK:
                    return i - start
                case EBADF, EFAULT, ENOTSOCK:
                    try Sys.fail("sendmmsg(UDP port \(port))", e)
                default:
                    // The first datagram of the run was refused (unreachable, too big, …): drop it.
                    refuse(1, e)
                    i += 1
                }
            }
        }
        return i - start
    }

    private func prepareSend(_ batch: PacketBatch, _ i: Int) {
        let p = batch.packet(i)
        batch.iovecs[i] = iovec(iov_base: p.baseAddress, iov_len: p.count)
        let length = batch.endpoints[i].write(sockaddr: UnsafeMutableRawPointer(batch.addresses.baseAddress! + i))
        withUnsafeMutablePointer(to: &batch.iovecs[i]) { iov in
            batch.messages[i].msg_hdr = msghdr(
                msg_name: UnsafeMutableRawPointer(batch.addresses.baseAddress! + i), msg_namelen: length,
                msg_iov: iov, msg_iovlen: 1, msg_control: nil, msg_controllen: 0, msg_flags: 0)
        }
        batch.messages[i].msg_len = 0
    }

    private func refuse(_ count: Int, _ e: Int32) {
        failedSends.add(UInt64(count), ordering: .relaxed)
        lastSendErrno.store(e, ordering: .relaxed)
    }

    // MARK: wait and close

    public func waitReadable(timeoutMilliseconds: Int32) throws(SystemError) -> WaitResult {
        if closed.load(ordering: .relaxed) { return .closed }
        let a = ipv4Descriptor >= 0 ? ipv4Descriptor : ipv6Descriptor
        let b: Int32? = ipv4Descriptor >= 0 && ipv6Descriptor >= 0 ? ipv6Descriptor : nil
        return try Readiness.wait((a, b), shutdown, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// Stops receiving and sending and wakes the receiver; the sockets are closed when the last
    /// reference goes (so a thread still inside a call never touches a recycled descriptor).
    public func close() {
        if closed.exchange(true, ordering: .relaxed) { return }
        shutdown.signal()
    }
}
