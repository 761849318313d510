import Core
import CShims
import Glibc
import Packet
import Runtime
import Synchronization

/// UDP GRO on receive for one socket: with `UDP_GRO` set, the kernel hands the socket a
/// run of same-flow datagrams as one message of up to 64 KiB plus a control message with the
/// segment size, so the receive path pays for one skb and one copy per run rather than per
/// datagram. This receiver `recvmmsg`s into a few 64 KiB buffers (allocated once) and cuts each
/// message into batch slots at the segment size (every segment has it but a shorter last one),
/// carrying whatever did not fit the batch over to the next call; a message without the control
/// message is one datagram, as before.
///
/// `@unchecked Sendable`: every mutable field is touched only by the bind's one receiving thread
/// (`DatagramBind`'s threading contract: one thread calls `receive` and `waitReadable`); the
/// buffers are allocated in `init` and freed in `deinit`.
final class CoalescedReceiver: @unchecked Sendable {
    /// The largest message GRO can build (an IP packet's worth).
    static let bufferBytes = 65_536
    /// Messages per `recvmmsg`: 8 × 64 KiB holds a whole batch even of 1,420-byte datagrams.
    let count: Int
    private let storage: UnsafeMutableRawPointer
    private let messages: UnsafeMutableBufferPointer<tv_mmsghdr>
    private let iovecs: UnsafeMutableBufferPointer<iovec>
    private let addresses: UnsafeMutableBufferPointer<sockaddr_storage>
    private let controls: UnsafeMutableRawPointer
    private static let controlSpace = tv_udp_gro_cmsg_space()

    /// Messages the last `recvmmsg` returned, the one being cut, and how far.
    private var received = 0
    private var next = 0
    private var offset = 0

    /// Coalesced messages received (more than one segment) and the segments they carried
    /// (readable from any thread).
    let coalescedMessages = Atomic<UInt64>(0)
    let coalescedSegments = Atomic<UInt64>(0)

    init(count: Int = 8) {
        self.count = count
        storage = .allocate(byteCount: count * CoalescedReceiver.bufferBytes, alignment: 64)
        messages = .allocate(capacity: count)
        messages.initialize(repeating: tv_mmsghdr())
        iovecs = .allocate(capacity: count)
        iovecs.initialize(repeating: iovec())
        addresses = .allocate(capacity: count)
        addresses.initialize(repeating: sockaddr_storage())
        controls = .allocate(byteCount: count * CoalescedReceiver.controlSpace, alignment: 8)
    }

    deinit {
        storage.deallocate()
        messages.deallocate()
        iovecs.deallocate()
        addresses.deallocate()
        controls.deallocate()
    }

    /// True while received bytes wait to be cut into slots (the socket may be empty meanwhile).
    var hasPending: Bool { next < received }

    /// Fills slots `start...` of `batch` from what is pending, then (at most once per call) from
    /// one `recvmmsg` on `fd`. Returns the slots filled; segments longer than a slot and
    /// truncated messages are counted in `truncated` and skipped.
    func fill(_ fd: Int32, _ batch: PacketBatch, at start: Int, port: UInt16, truncated: inout UInt64) throws(SystemError) -> Int {
        var n = start
        var polled = false
        let room = batch.slotSize - batch.headroom
        while n < batch.capacity {
            if next >= received {
                if polled { break }
                polled = true
                guard let got = try receive(fd, port: port) else { break }
                received = got
                next = 0
                offset = 0
                continue
            }
            let message = messages[next]
            let length = Int(message.msg_len)
            guard message.msg_hdr.msg_flags & Int32(MSG_TRUNC) == 0,
                  let source = Endpoint(sockaddr: UnsafeRawPointer(addresses.baseAddress! + next))
            else {
                truncated += 1
                next += 1
                offset = 0
                continue
            }
            let base = storage + next * CoalescedReceiver.bufferBytes
            if length == 0 {  // an empty datagram is still a datagram (the engine counts it malformed)
                put(batch, n, from: base, length: 0, source)
                n += 1
                next += 1
                continue
            }
            let gso = Int(withUnsafePointer(to: message.msg_hdr) { tv_udp_gro_size($0) })
            let segment = gso > 0 ? gso : length
            if offset == 0 && segment < length {
                coalescedMessages.add(1, ordering: .relaxed)
                coalescedSegments.add(UInt64((length + segment - 1) / segment), ordering: .relaxed)
            }
            while offset < length && n < batch.capacity {
                let piece = min(segment, length - offset)
                if piece <= room {
                    put(batch, n, from: base + offset, length: piece, source)
                    n += 1
                } else {
                    truncated += 1
                }
                offset += piece
            }
            if offset >= length {
                next += 1
                offset = 0
            }
        }
        return n - start
    }

    private func put(_ batch: PacketBatch, _ i: Int, from: UnsafeMutableRawPointer, length: Int, _ source: Endpoint) {
        if length > 0 { batch.readRoom(i).baseAddress!.copyMemory(from: from, byteCount: length) }
        batch.offsets[i] = batch.headroom
        batch.lengths[i] = length
        batch.endpoints[i] = source
    }

    /// One nonblocking `recvmmsg` into the buffers: the message count, nil when none was waiting.
    private func receive(_ fd: Int32, port: UInt16) throws(SystemError) -> Int? {
        for i in 0..<count {
            iovecs[i] = iovec(iov_base: storage + i * CoalescedReceiver.bufferBytes, iov_len: CoalescedReceiver.bufferBytes)
            withUnsafeMutablePointer(to: &iovecs[i]) { iov in
                messages[i].msg_hdr = msghdr(
                    msg_name: UnsafeMutableRawPointer(addresses.baseAddress! + i),
                    msg_namelen: socklen_t(MemoryLayout<sockaddr_storage>.size),
                    msg_iov: iov, msg_iovlen: 1,
                    msg_control: controls + i * CoalescedReceiver.controlSpace, msg_controllen: CoalescedReceiver.controlSpace,
                    msg_flags: 0)
            }
            messages[i].msg_len = 0
        }
        guard let got = try Sys.shimNonblocking("recvmmsg(UDP port \(port), GRO)", {
            tv_recvmmsg(fd, messages.baseAddress!, UInt32(count), Int32(MSG_DONTWAIT))
        }) else { return nil }
        return Int(got)
    }
}
