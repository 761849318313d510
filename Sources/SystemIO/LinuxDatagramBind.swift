import Core
import CShims
import Glibc
import Packet
import Runtime
import Synchronization

/// The Linux UDP bind: one IPv4 socket and one IPv6 socket (`IPV6_V6ONLY`) on the same port,
/// nonblocking, with large socket buffers, moving whole batches with `recvmmsg(2)`/`sendmmsg(2)`.
///
/// Socket buffers matter more than anything else for small-packet throughput (a full receive buffer
/// is where wireguard-go loses packets): the bind asks for `bufferBytes` with `SO_RCVBUFFORCE`/
/// `SO_SNDBUFFORCE` (CAP_NET_ADMIN, ignores `net.core.rmem_max`), falls back to `SO_RCVBUF`/
/// `SO_SNDBUF` (capped by `rmem_max`/`wmem_max`), and reports what the kernel granted in
/// ``buffers``.
///
/// Threading: one receiver; ``send(_:from:)`` may run on several threads at once, each with its own
/// batch — it builds its messages in that batch's arrays, shares only atomics (the GSO switches,
/// counters), and each `sendmmsg(2)` is one system call the kernel serialises on the socket.
public final class LinuxDatagramBind: Sendable {
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
    /// Whether sends use UDP GSO (UDP_SEGMENT) on each family's socket: on unless turned off at
    /// init, and switched off for good when the kernel answers EIO (a route without checksum offload).
    private let segmentV4: Atomic<Bool>
    private let segmentV6: Atomic<Bool>
    /// True while sends still use UDP GSO (on either family).
    public var segmentation: Bool { segmentV4.load(ordering: .relaxed) || segmentV6.load(ordering: .relaxed) }
    /// UDP GRO receivers, one per family whose socket took `UDP_GRO` (nil: plain datagrams).
    private let coalescingV4: CoalescedReceiver?
    private let coalescingV6: CoalescedReceiver?
    /// True when receives use UDP GRO (on either family).
    public var receiveCoalescing: Bool { coalescingV4 != nil || coalescingV6 != nil }
    /// Coalesced messages received so far and the datagrams they carried (GRO at work).
    public var coalescedReceives: (messages: UInt64, datagrams: UInt64) {
        var m: UInt64 = 0, d: UInt64 = 0
        for r in [coalescingV4, coalescingV6] {
            if let r {
                m += r.coalescedMessages.load(ordering: .relaxed)
                d += r.coalescedSegments.load(ordering: .relaxed)
            }
        }
        return (m, d)
    }

    /// Binds `port` (0 = an ephemeral port, the same on both families) on `ipv4` and `ipv6`
    /// (wildcard by default; nil leaves that family out). `segmentation` turns UDP GSO on sends
    /// on, `coalescing` UDP GRO on receives (each falls back by itself where the kernel lacks it).
    public init(
        port: UInt16, bufferBytes: Int = 8 << 20,
        ipv4: IPAddress? = IPAddress(v4: 0), ipv6: IPAddress? = IPAddress(v6High: 0, low: 0),
        segmentation: Bool = true, coalescing: Bool? = nil
    ) throws(SystemError) {
        let coalesce = coalescing ?? segmentation
        segmentV4 = Atomic(segmentation)
        segmentV6 = Atomic(segmentation)
        var attempt = 0
        while true {
            attempt += 1
            var v4: Int32 = -1
            var v6: Int32 = -1
            do {
                var bound = port
                if let a = ipv4 {
                    v4 = try LinuxDatagramBind.openSocket(Endpoint(address: a, port: bound))
                    bound = try LinuxDatagramBind.localPort(v4)
                }
                if let a = ipv6 {
                    do {
                        v6 = try LinuxDatagramBind.openSocket(Endpoint(address: a, port: bound))
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
                // UDP GRO (Linux 5.0+): refused (ENOPROTOOPT) on older kernels, then plain receives.
                func coalescing(_ fd: Int32) -> CoalescedReceiver? {
                    guard coalesce, fd >= 0, (try? Sys.setIntOption(fd, TV_SOL_UDP, TV_UDP_GRO, 1, "UDP_GRO")) != nil else { return nil }
                    return CoalescedReceiver()
                }
                coalescingV4 = coalescing(v4)
                coalescingV6 = coalescing(v6)
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

    private static func openSocket(_ local: Endpoint) throws(SystemError) -> Int32 {
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
        let endpoint = try withUnsafeMutablePointer(to: &storage) { (p) throws(SystemError) -> Endpoint? in
            try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { (sa) throws(SystemError) -> Endpoint? in
                _ = try Sys.call("getsockname") { getsockname(fd, sa, &length) }
                return Endpoint(sockaddr: UnsafeRawPointer(sa))
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
        if let gro = fd == ipv4Descriptor ? coalescingV4 : coalescingV6 {
            var truncated: UInt64 = 0
            let n = try gro.fill(fd, batch, at: start, port: port, truncated: &truncated)
            if truncated > 0 { truncatedReceives.add(truncated, ordering: .relaxed) }
            return n
        }
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
                let source = Endpoint(sockaddr: UnsafeRawPointer(batch.addresses.baseAddress! + i))
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
            // A run of slots of one family goes out in one sendmmsg; with UDP GSO, equal-sized
            // datagrams to one endpoint share one message (the kernel cuts them apart again).
            let runStart = i
            let v6 = batch.endpoints[i].address.isIPv6
            let fd = v6 ? ipv6Descriptor : ipv4Descriptor
            let useGSO = v6 ? segmentV6.load(ordering: .relaxed) : segmentV4.load(ordering: .relaxed)
            var end = i
            var groups = 0
            while end < batch.count && batch.endpoints[end].address.isIPv6 == v6 {
                let members = useGSO ? LinuxDatagramBind.segmentRun(batch, from: end) : 1
                prepareSend(batch, first: end, members: members, message: runStart + groups)
                groups += 1
                end += members
            }
            if fd < 0 {
                refuse(end - i, EAFNOSUPPORT)
                i = end
                continue
            }
            var g = 0
            while g < groups {
                let r = tv_sendmmsg(fd, batch.messages.baseAddress! + runStart + g, UInt32(groups - g), Int32(MSG_DONTWAIT))
                if r > 0 {
                    for k in g..<(g + Int(r)) { i += Int(batch.groupSlots[runStart + k]) }
                    g += Int(r)
                    continue
                }
                let e: Int32 = r == 0 ? EAGAIN : -r
                let members = Int(batch.groupSlots[runStart + g])
                switch e {
                case EINTR:
                    continue
                case EAGAIN, EWOULDBLOCK:
                    return i - start
                case EBADF, EFAULT, ENOTSOCK:
                    try Sys.fail("sendmmsg(UDP port \(port))", e)
                case EIO where members > 1:
                    // The route's device cannot segment UDP (no checksum offload): stop using GSO
                    // on this socket; the outer loop sends the rest one datagram per message.
                    if v6 { segmentV6.store(false, ordering: .relaxed) } else { segmentV4.store(false, ordering: .relaxed) }
                    g = groups
                default:
                    // The first message was refused (unreachable, too big, …): drop its datagrams.
                    refuse(members, e)
                    i += members
                    g += 1
                }
            }
        }
        return i - start
    }

    /// How many slots from `first` can share one UDP GSO message: same endpoint, every datagram the
    /// length of the first except a shorter last one, at most 64 and 65,000 bytes in all.
    static func segmentRun(_ batch: PacketBatch, from first: Int) -> Int {
        let size = batch.lengths[first]
        let to = batch.endpoints[first]
        guard size > 0 else { return 1 }
        var total = size
        var k = first + 1
        while k < batch.count && k - first < maxSegments {
            let length = batch.lengths[k]
            guard length > 0 && length <= size && total + length <= maxSegmentedBytes && batch.endpoints[k] == to
            else { break }
            total += length
            k += 1
            if length < size { break }
        }
        return k - first
    }

    /// Datagrams per UDP GSO send (the kernel allows 64 on older kernels, 128 on newer).
    static let maxSegments = 64
    /// Payload bytes per UDP GSO send (an IP packet's 65,535 less headers).
    static let maxSegmentedBytes = 65_000

    /// Builds message `message` sending slots `first ..< first + members` to slot `first`'s
    /// endpoint: one iovec per slot (they are contiguous in `iovecs`), and a UDP_SEGMENT control
    /// message when there is more than one.
    private func prepareSend(_ batch: PacketBatch, first: Int, members: Int, message: Int) {
        for k in first..<(first + members) {
            let p = batch.packet(k)
            batch.iovecs[k] = iovec(iov_base: p.baseAddress, iov_len: p.count)
        }
        let length = batch.endpoints[first].write(sockaddr: UnsafeMutableRawPointer(batch.addresses.baseAddress! + first))
        var control: UnsafeMutableRawPointer? = nil
        var controlLength = 0
        if members > 1 {
            control = batch.controls + first * PacketBatch.controlSpace
            controlLength = tv_udp_segment_cmsg(control, UInt16(batch.lengths[first]))
        }
        batch.messages[message].msg_hdr = msghdr(
            msg_name: UnsafeMutableRawPointer(batch.addresses.baseAddress! + first), msg_namelen: length,
            msg_iov: batch.iovecs.baseAddress! + first, msg_iovlen: members,
            msg_control: control, msg_controllen: controlLength, msg_flags: 0)
        batch.messages[message].msg_len = 0
        batch.groupSlots[message] = Int32(members)
    }

    private func refuse(_ count: Int, _ e: Int32) {
        failedSends.add(UInt64(count), ordering: .relaxed)
        lastSendErrno.store(e, ordering: .relaxed)
    }

    // MARK: wait and close

    public func waitReadable(timeoutMilliseconds: Int32) throws(SystemError) -> WaitResult {
        if closed.load(ordering: .relaxed) { return .closed }
        // Datagrams of a coalesced message the last receive had no room for are already here.
        if coalescingV4?.hasPending == true || coalescingV6?.hasPending == true { return .readable }
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
