import CMNL
import Glibc

/// Reading the kernel's replies to one rtnetlink request (netlink(7), rtnetlink(7)): one buffer as
/// `recv` returned it, walked with libmnl's `mnl_cb_run` — acknowledgements and errors
/// (`NLMSG_ERROR`), `NLMSG_DONE`, `NLMSG_NOOP`/`NLMSG_OVERRUN`, several messages per buffer
/// (multipart dumps) — and data messages handed to a callback. Pure: bytes in, an ``Outcome``
/// out, so the parser is tested and fuzzed (`fuzz/netlink`) without a socket.
///
/// Every input gives an outcome, never a read past `bytes`: a buffer that is not a whole number of
/// messages (``isFramed(_:)``), a truncated error or a data message too short for its header is
/// `EBADMSG`; unknown types are skipped.
public enum NetlinkReply {
    /// What one buffer of replies says about the request.
    public enum Outcome: Equatable, Sendable {
        /// No acknowledgement yet: read the next buffer.
        case more
        /// Acknowledged (`NLMSG_ERROR` with error 0) or a dump ended (`NLMSG_DONE`).
        case done
        /// The kernel refused the request (its `errno`), or the reply was not acceptable:
        /// `EBADMSG` malformed (not whole messages, a truncated error or data message), `EPROTO` another request's
        /// sequence number, `ESRCH` another socket's port, `EINTR` a dump interrupted by a change.
        case failed(errno: Int32)
    }

    /// Walks `bytes` (the replies to the request numbered `sequence` on port `portID`; 0 for
    /// either accepts any), passing each data message (type ≥ `NLMSG_MIN_TYPE`) to `callback`
    /// with `data`. A callback that returns `MNL_CB_ERROR` without setting `errno` fails as
    /// `EBADMSG`.
    public static func process(
        _ bytes: UnsafeRawBufferPointer, sequence: UInt32, portID: UInt32,
        callback: mnl_cb_t? = nil, data: UnsafeMutableRawPointer? = nil
    ) -> Outcome {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return .more }
        guard isFramed(bytes) else { return .failed(errno: EBADMSG) }
        errno = 0
        let r = mnl_cb_run(base, bytes.count, sequence, portID, callback, data)
        if r < 0 {
            let e = errno
            return .failed(errno: e == 0 ? EBADMSG : e)
        }
        return r == MNL_CB_STOP ? .done : .more
    }

    /// True when `bytes` is a whole number of messages: each header's `nlmsg_len` at least the
    /// header and within the bytes left, the next message at its 4-byte-aligned end (`NLMSG_ALIGN`;
    /// the last one's padding may be absent).
    ///
    /// libmnl 1.0.4's `mnl_nlmsg_ok` compares `(int)nlmsg_len <= len`, so a length of 2³¹ or more
    /// passes as negative and `mnl_nlmsg_next` jumps that far past the buffer (a crash the fuzzer
    /// found); a short or overlong message would otherwise end the walk silently.
    public static func isFramed(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let header = MemoryLayout<nlmsghdr>.size
        var offset = 0
        while offset < bytes.count {
            let left = bytes.count - offset
            guard left >= header else { return false }
            let length = Int(bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
            guard length >= header, length <= left else { return false }
            offset += (length + 3) & ~3
        }
        return true
    }

    /// Walks `bytes` as the replies to `RTM_GETLINK`, filling `link` from its `RTM_NEWLINK`
    /// (index, `IFF_UP`, a 4-byte `IFLA_MTU`; other attributes and other message types are
    /// skipped). An `RTM_NEWLINK` too short for its `ifinfomsg` fails as `EBADMSG`.
    public static func link(
        _ bytes: UnsafeRawBufferPointer, sequence: UInt32, portID: UInt32, into link: inout NetlinkSocket.Link
    ) -> Outcome {
        withUnsafeMutablePointer(to: &link) { p in
            process(bytes, sequence: sequence, portID: portID, callback: parseLink, data: UnsafeMutableRawPointer(p))
        }
    }

    /// `mnl_cb_t` for an `RTM_NEWLINK` reply: fills the `NetlinkSocket.Link` at `data`.
    static let parseLink: mnl_cb_t = { nlh, data in
        guard let nlh, let data else { return MNL_CB_ERROR }
        guard nlh.pointee.nlmsg_type == UInt16(RTM_NEWLINK) else { return MNL_CB_OK }
        // mnl_cb_run checked only that the message fits the buffer; the ifinfomsg must fit the message.
        guard Int(nlh.pointee.nlmsg_len) >= mnl_nlmsg_size(MemoryLayout<ifinfomsg>.size) else {
            errno = EBADMSG
            return MNL_CB_ERROR
        }
        let link = data.assumingMemoryBound(to: NetlinkSocket.Link.self)
        let ifi = mnl_nlmsg_get_payload(nlh)!.assumingMemoryBound(to: ifinfomsg.self)
        link.pointee.index = ifi.pointee.ifi_index
        link.pointee.isUp = ifi.pointee.ifi_flags & UInt32(IFF_UP) != 0
        _ = mnl_attr_parse(nlh, UInt32(MemoryLayout<ifinfomsg>.size), { attr, data in
            guard let attr, let data else { return MNL_CB_OK }
            if mnl_attr_get_type(attr) == UInt16(IFLA_MTU) && mnl_attr_validate(attr, MNL_TYPE_U32) >= 0 {
                data.assumingMemoryBound(to: NetlinkSocket.Link.self).pointee.mtu = mnl_attr_get_u32(attr)
            }
            return MNL_CB_OK
        }, data)
        return MNL_CB_OK
    }
}
