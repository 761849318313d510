import Core
import CMNL
import Glibc
import Runtime

/// A `NETLINK_ROUTE` socket through libmnl: one request at a time, each acknowledged
/// (the call sequence of wireguard-tools' `embeddable-wg-library/wireguard.c`: open, bind, put
/// header and attributes, send, receive until the acknowledgement, run callbacks).
///
/// Not thread-safe; one owner (the configurator) at a time. Unprivileged processes may read
/// (`RTM_GETLINK`); changes need CAP_NET_ADMIN and fail with `EPERM` otherwise.
public final class NetlinkSocket {
    private let socket: OpaquePointer
    private let portID: UInt32
    private var sequence: UInt32
    private let buffer: UnsafeMutableRawPointer
    private let receiveBuffer: UnsafeMutableRawPointer
    private static let receiveSize = 32 * 1024

    /// Opens and binds the socket. Throws e.g. `netlink: open: Protocol not supported (EPROTONOSUPPORT)`.
    public init() throws(SystemError) {
        guard let nl = mnl_socket_open(NETLINK_ROUTE) else { throw SystemError("netlink: open", errno: errno) }
        guard mnl_socket_bind(nl, 0, pid_t(MNL_SOCKET_AUTOPID)) >= 0 else {
            let e = errno
            mnl_socket_close(nl)
            throw SystemError("netlink: bind", errno: e)
        }
        socket = nl
        portID = mnl_socket_get_portid(nl)
        sequence = UInt32(truncatingIfNeeded: time(nil))
        buffer = .allocate(byteCount: NetlinkMessage.bufferSize, alignment: 16)
        receiveBuffer = .allocate(byteCount: NetlinkSocket.receiveSize, alignment: 16)
    }

    deinit {
        mnl_socket_close(socket)
        buffer.deallocate()
        receiveBuffer.deallocate()
    }

    /// Information about a link from `RTM_GETLINK`.
    public struct Link: Sendable, Equatable {
        /// The interface index.
        public var index: Int32
        /// `IFLA_MTU`.
        public var mtu: UInt32
        /// True when `IFF_UP` is set.
        public var isUp: Bool

        /// A link with these values (all zero: nothing read yet).
        public init(index: Int32 = 0, mtu: UInt32 = 0, isUp: Bool = false) {
            self.index = index
            self.mtu = mtu
            self.isUp = isUp
        }
    }

    /// Looks up interface `name`. Throws `netlink: get link NAME: No such device (ENODEV)` when absent.
    public func link(named name: String) throws(SystemError) -> Link {
        var found = Link(index: 0, mtu: 0, isUp: false)
        try withUnsafeMutablePointer(to: &found) { (p) throws(SystemError) in
            try request("netlink: get link \(name)", data: UnsafeMutableRawPointer(p), callback: NetlinkReply.parseLink) {
                NetlinkMessage.getLink(into: $0, sequence: $1, name: name)
            }
        }
        guard found.index > 0 else { throw SystemError("netlink: get link \(name)", errno: ENODEV) }
        return found
    }

    /// Sends the message `build` writes (given the buffer and a fresh sequence number) and waits for
    /// the kernel's acknowledgement; a kernel error is thrown as `SystemError(operation, errno)`.
    /// Replies other than the acknowledgement go to `callback` with `data` (``NetlinkReply``
    /// walks each buffer received).
    public func request(
        _ operation: @autoclosure () -> String, data: UnsafeMutableRawPointer? = nil, callback: mnl_cb_t? = nil,
        _ build: (UnsafeMutableRawPointer, UInt32) -> UnsafeMutablePointer<nlmsghdr>
    ) throws(SystemError) {
        sequence &+= 1
        let seq = sequence
        let nlh = build(buffer, seq)
        guard mnl_socket_sendto(socket, nlh, Int(nlh.pointee.nlmsg_len)) >= 0 else {
            throw SystemError(operation(), errno: errno)
        }
        while true {
            let n = mnl_socket_recvfrom(socket, receiveBuffer, NetlinkSocket.receiveSize)
            if n < 0 {
                if errno == EINTR { continue }
                throw SystemError(operation(), errno: errno)
            }
            let replies = UnsafeRawBufferPointer(start: receiveBuffer, count: n)
            switch NetlinkReply.process(replies, sequence: seq, portID: portID, callback: callback, data: data) {
            case .more: continue
            case .done: return
            case .failed(let e): throw SystemError(operation(), errno: e)
            }
        }
    }
}
