import Core
import CShims
import Glibc
import Packet
import Runtime
import Synchronization

/// The Linux TUN device: `/dev/net/tun` with `IFF_TUN | IFF_NO_PI`, nonblocking, one queue
/// (optionally `IFF_MULTI_QUEUE`).
///
/// Opening creates the interface (or attaches to an existing persistent one); closing the
/// descriptor removes a non-persistent interface together with its addresses and routes.
/// Configure it (MTU, addresses, link up, routes) with ``NetlinkInterfaceConfigurator``.
///
/// ``close()`` stops reads and writes and wakes the reader; the descriptor itself (and with it a
/// non-persistent interface) is released when the last reference goes, so a thread still inside a
/// call never touches a recycled descriptor number.
///
/// With `offload` (the default), the device is opened with `IFF_VNET_HDR` and asks the kernel for
/// checksum, TCP and UDP segmentation offload (`TUNSETOFFLOAD`, falling back to fewer bits on older
/// kernels). Both directions then move fewer, larger packets through the kernel:
/// - reads may return a GSO super-packet of up to 64 KiB (or a packet whose checksum is left
///   partial); ``readPackets(into:)`` splits it into ordinary packets (`GSOSegmenter`), so callers
///   always see plain IP packets;
/// - ``writePackets(_:)`` coalesces consecutive segments of one TCP (or UDP) flow in a batch into one
///   super-packet (`TUNCoalescer`, the rules of the kernel's GRO) and writes it with one `writev(2)`
///   without copying payloads; the kernel forwards it as one packet and segments only if it must.
/// Without offloads each packet is one `read(2)`/`write(2)`.
public final class LinuxTun: Sendable {
    /// The kernel's name for the interface (the requested one, or `tunN` when none was given).
    public let name: String
    /// The MTU the caller configured (informational; set it with the configurator).
    public let mtu: Int
    /// The TUN descriptor (nonblocking, close-on-exec). Valid until ``close()``.
    public let descriptor: Int32
    private let shutdown: EventNotifier
    private let closed = Atomic<Bool>(false)
    private let released = Atomic<Bool>(false)
    private let truncatedReads = Atomic<UInt64>(0)
    private let refusedWrites = Atomic<UInt64>(0)
    private let malformedReads = Atomic<UInt64>(0)
    private let superPacketsRead = Atomic<UInt64>(0)
    private let superPacketsWritten = Atomic<UInt64>(0)
    private let packetsCoalesced = Atomic<UInt64>(0)

    /// True when the device was opened with IFF_VNET_HDR (every read and write carries the header).
    public var vnetHeader: Bool { reader != nil }
    /// The offloads in effect: the TUN_F_* bits the kernel accepted (empty without `offload`).
    public let offloads: Offloads
    /// The reader's state with offloads: the last read (header + packet) and, when a super-packet
    /// did not fit the caller's batch, which segment comes next. Only the reader thread touches it.
    private let reader: OffloadReader?

    /// Opens `/dev/net/tun` and attaches to interface `name` (at most 15 bytes; empty = kernel picks).
    /// With `multiQueue`, the interface is created with `IFF_MULTI_QUEUE` and each further
    /// `LinuxTun` opened on the same name is one more queue (one reader thread per queue).
    /// Needs CAP_NET_ADMIN. Throws e.g. `open TUN tv0: Operation not permitted (EPERM)`.
    /// `offloadLimit` caps what is asked for (tests use it to act like an older kernel).
    public init(name: String, mtu: Int, multiQueue: Bool = false, offload: Bool = true,
                offloadLimit: Offloads = [.checksum, .tso4, .tso6, .uso4, .uso6]) throws(SystemError)
    {
        var out = [CChar](repeating: 0, count: Int(TV_IFNAMSIZ))
        let fd = try Sys.shim("open TUN \(name.isEmpty ? "(any)" : name)") {
            name.withCString { tv_tun_open($0, multiQueue ? 1 : 0, offload ? 1 : 0, &out) }
        }
        descriptor = fd
        do {
            shutdown = try EventNotifier()
            offloads = offload ? try LinuxTun.negotiateOffloads(fd, limit: offloadLimit) : []
        } catch {
            Sys.close(fd)
            throw error
        }
        reader = offload ? OffloadReader() : nil
        self.name = String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        self.mtu = mtu
    }

    deinit {
        close()
        if !released.load(ordering: .acquiring) { Sys.close(descriptor) }
    }

    /// Closes the descriptor now instead of at deinit, so the kernel removes the interface at a
    /// known moment (tunneld runs wg-quick's `PostDown` after that). Call only once every reader
    /// and writer has stopped (the engine joined its threads).
    public func release() {
        close()
        if !released.exchange(true, ordering: .acquiringAndReleasing) { Sys.close(descriptor) }
    }

    /// Packets dropped instead of thrown so far.
    public var counters: TunDeviceCounters {
        var c = TunDeviceCounters()
        c.truncatedReads = truncatedReads.load(ordering: .relaxed)
        c.refusedWrites = refusedWrites.load(ordering: .relaxed)
        c.malformedReads = malformedReads.load(ordering: .relaxed)
        c.superPacketsRead = superPacketsRead.load(ordering: .relaxed)
        c.superPacketsWritten = superPacketsWritten.load(ordering: .relaxed)
        c.packetsCoalesced = packetsCoalesced.load(ordering: .relaxed)
        return c
    }

    public var offloadDescription: String { vnetHeader ? offloads.description : "off" }

    /// Asks for every offload we can undo (checksum, TSO4/6, USO4/6); kernels before 6.2 refuse the
    /// USO bits with EINVAL, so it retries without them, and then with checksum offload alone.
    private static func negotiateOffloads(_ fd: Int32, limit: Offloads) throws(SystemError) -> Offloads {
        let attempts: [UInt32] = [
            UInt32(TV_TUN_F_CSUM | TV_TUN_F_TSO4 | TV_TUN_F_TSO6 | TV_TUN_F_USO4 | TV_TUN_F_USO6),
            UInt32(TV_TUN_F_CSUM | TV_TUN_F_TSO4 | TV_TUN_F_TSO6),
            UInt32(TV_TUN_F_CSUM),
        ]
        for all in attempts {
            let bits = all & limit.rawValue
            let r = tv_tun_set_offload(fd, bits)
            if r == 0 { return Offloads(rawValue: bits) }
            if -r != EINVAL { try Sys.fail("TUNSETOFFLOAD", -r) }
        }
        return []
    }

    public func readPackets(into batch: PacketBatch) throws(SystemError) -> Int {
        if let reader { return try readOffloaded(into: batch, reader) }
        var n = 0
        batch.count = 0
        if closed.load(ordering: .relaxed) { return 0 }
        var truncated: UInt64 = 0
        while n < batch.capacity {
            let room = batch.readRoom(n)
            // A packet that fills the whole room may have been cut: slots must be at least MTU + 1.
            guard let got = try Sys.readNonblocking(descriptor, room, "TUN \(name)") else { break }
            if got >= room.count {
                truncated += 1
                continue
            }
            batch.offsets[n] = batch.headroom
            batch.lengths[n] = got
            n += 1
        }
        if truncated > 0 { truncatedReads.add(truncated, ordering: .relaxed) }
        batch.count = n
        return n
    }

    public func writePackets(_ batch: PacketBatch) throws(SystemError) -> Int {
        if vnetHeader { return try writeOffloaded(batch) }
        var written = 0
        if closed.load(ordering: .relaxed) { return 0 }
        var refused: UInt64 = 0
        while written < batch.count {
            let packet = UnsafeRawBufferPointer(batch.packet(written))
            do {
                guard try Sys.writeNonblocking(descriptor, packet, "TUN \(name)") != nil else { break }
            } catch where error.errno == EINVAL || error.errno == EIO || error.errno == ENOBUFS {
                refused += 1
            }
            written += 1
        }
        if refused > 0 { refusedWrites.add(refused, ordering: .relaxed) }
        return written
    }

    // MARK: offloaded reads and writes

    /// Reads each packet straight into the next slot (the header into the reader's buffer) and
    /// finishes it there; a super-packet runs on past the slot into the reader's buffer, is made
    /// contiguous there and cut into slots, resuming in the next call when the batch is full.
    private func readOffloaded(into batch: PacketBatch, _ r: OffloadReader) throws(SystemError) -> Int {
        var n = 0
        batch.count = 0
        if closed.load(ordering: .relaxed) { return 0 }
        var truncated: UInt64 = 0
        var malformed: UInt64 = 0
        var superPackets: UInt64 = 0
        while n < batch.capacity {
            if r.remaining <= 0 {
                let room = batch.readRoom(n)
                guard let got = try r.read(descriptor, slot: room, "TUN \(name)") else { break }
                r.split = nil
                r.next = 0
                if got >= r.buffer.count {
                    truncated += 1
                    continue
                }
                let length = got - VirtioNetHeader.size
                do throws(OffloadError) {
                    let header = try VirtioNetHeader(UnsafeRawBufferPointer(rebasing: r.buffer[0..<min(got, VirtioNetHeader.size)]))
                    if length <= room.count {
                        let inSlot = UnsafeMutableRawBufferPointer(rebasing: room[0..<length])
                        let split = try GSOSegmenter.plan(header, packet: UnsafeRawBufferPointer(inSlot))
                        if GSOSegmenter.finishInPlace(split, packet: inSlot) {
                            batch.offsets[n] = batch.headroom
                            batch.lengths[n] = length
                            n += 1
                            continue
                        }
                        r.stage(UnsafeRawBufferPointer(inSlot))  // a small super-packet: cut it from the buffer
                        r.split = split
                    } else {
                        r.stage(UnsafeRawBufferPointer(room), total: length)
                        r.split = try GSOSegmenter.plan(header, packet: r.packet)
                    }
                    superPackets += 1
                } catch {
                    malformed += 1
                    continue
                }
                if let split = r.split, split.maxSegmentLength > batch.slotSize - batch.headroom {
                    truncated += UInt64(split.count)
                    r.split = nil
                    continue
                }
            }
            guard let split = r.split else { continue }
            while n < batch.capacity && r.next < split.count {
                let got = GSOSegmenter.segment(r.next, of: split, packet: r.packet, into: batch.readRoom(n))
                r.next += 1
                batch.offsets[n] = batch.headroom
                batch.lengths[n] = got
                n += 1
            }
        }
        if truncated > 0 { truncatedReads.add(truncated, ordering: .relaxed) }
        if malformed > 0 { malformedReads.add(malformed, ordering: .relaxed) }
        if superPackets > 0 { superPacketsRead.add(superPackets, ordering: .relaxed) }
        batch.count = n
        return n
    }

    /// Coalesces the batch (GRO rules) and writes each group with one writev: header, first member
    /// whole, later members' payloads. A TUN write does not block in practice; one that would is
    /// retried briefly and then counted as refused, so the whole batch is always consumed.
    private func writeOffloaded(_ batch: PacketBatch) throws(SystemError) -> Int {
        if closed.load(ordering: .relaxed) { return 0 }
        let count = batch.count
        let w = batch.tunWriteScratch ?? TunWriteScratch(capacity: batch.capacity)
        batch.tunWriteScratch = w
        for k in 0..<count { w.packets[k] = batch.packet(k) }
        // Only what the kernel agreed to segment is coalesced (TSO4/6 and USO4/6 come in pairs).
        let groups = w.coalescer.coalesce(w.packets, count: count, allowTCP: offloads.contains(.tso4),
                                          allowUDP: offloads.contains(.uso4))
        var refused: UInt64 = 0
        var superPackets: UInt64 = 0
        var coalesced: UInt64 = 0
        for g in 0..<groups {
            let members = w.coalescer.members(ofGroup: g)
            let skip = w.coalescer.skip(ofGroup: g)
            w.coalescer.header(ofGroup: g).write(to: w.header)
            w.iovecs[0] = iovec(iov_base: w.header, iov_len: VirtioNetHeader.size)
            var iovCount = 1
            for (m, index) in members.enumerated() {
                let p = w.packets[Int(index)]
                let from = m == 0 ? 0 : skip
                w.iovecs[iovCount] = iovec(iov_base: p.baseAddress! + from, iov_len: p.count - from)
                iovCount += 1
            }
            let memberCount = members.count
            var tries = 0
            while true {
                let r = tv_writev(descriptor, w.iovecs, Int32(iovCount))
                if r >= 0 { break }
                let e = Int32(-r)
                if e == EINTR { continue }
                if (e == EAGAIN || e == EWOULDBLOCK) && tries < 50 {
                    tries += 1
                    sched_yield()
                    continue
                }
                if e == EBADF || e == EFAULT { try Sys.fail("writev(TUN \(name))", e) }
                refused += UInt64(memberCount)  // EINVAL, EIO, ENOBUFS, or still busy
                break
            }
            if memberCount > 1 {
                superPackets += 1
                coalesced += UInt64(memberCount)
            }
        }
        if refused > 0 { refusedWrites.add(refused, ordering: .relaxed) }
        if superPackets > 0 {
            superPacketsWritten.add(superPackets, ordering: .relaxed)
            packetsCoalesced.add(coalesced, ordering: .relaxed)
        }
        return count
    }

    public func waitReadable(timeoutMilliseconds: Int32) throws(SystemError) -> WaitResult {
        if closed.load(ordering: .relaxed) { return .closed }
        return try Readiness.wait((descriptor, nil), shutdown, timeoutMilliseconds: timeoutMilliseconds)
    }

    public func close() {
        if closed.exchange(true, ordering: .relaxed) { return }
        shutdown.signal()
    }
}

extension LinuxTun {
    /// The TUN_F_* offloads a device negotiated.
    public struct Offloads: OptionSet, Sendable, CustomStringConvertible {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let checksum = Offloads(rawValue: UInt32(TV_TUN_F_CSUM))
        public static let tso4 = Offloads(rawValue: UInt32(TV_TUN_F_TSO4))
        public static let tso6 = Offloads(rawValue: UInt32(TV_TUN_F_TSO6))
        public static let uso4 = Offloads(rawValue: UInt32(TV_TUN_F_USO4))
        public static let uso6 = Offloads(rawValue: UInt32(TV_TUN_F_USO6))

        /// e.g. `csum tso4 tso6 uso4 uso6`, or `none`.
        public var description: String {
            let names: [(Offloads, String)] = [
                (.checksum, "csum"), (.tso4, "tso4"), (.tso6, "tso6"), (.uso4, "uso4"), (.uso6, "uso6"),
            ]
            let on = names.filter { contains($0.0) }.map(\.1)
            if on.isEmpty { return "none" }
            return on.joined(separator: " ")
        }
    }
}

/// The offloaded reader's buffer: the header of each read, and a super-packet (up to 64 KiB)
/// being handed out, with the split it is handed out by.
///
/// A read scatters into three places: the header here, the packet into the caller's next slot,
/// and whatever does not fit the slot here again, just after the slot's share (`buffer[10 + room
/// ...]`); copying the slot's share in front (`stage`) makes a super-packet contiguous.
///
/// `@unchecked Sendable`: only the device's one reader thread touches it (``TunDevice``'s threading
/// contract: one thread reads at a time); it is created in `init` and never shared otherwise.
final class OffloadReader: @unchecked Sendable {
    /// Header, then the packet being cut (65,535 bytes and one more to detect truncation).
    let buffer: UnsafeMutableRawBufferPointer
    private let iovecs: UnsafeMutablePointer<iovec>
    /// Bytes of packet after the header.
    var length = 0
    /// How the staged packet splits (nil when none is being handed out).
    var split: GSOSplit?
    /// The next segment of `split` to hand out.
    var next = 0
    /// Segments of the staged packet not handed out yet.
    var remaining: Int { (split?.count ?? 0) - next }

    init() {
        buffer = .allocate(byteCount: VirtioNetHeader.size + 65_535 + 1, alignment: 64)
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
        iovecs = .allocate(capacity: 3)
        iovecs.initialize(repeating: iovec(), count: 3)
    }

    deinit {
        buffer.deallocate()
        iovecs.deallocate()
    }

    /// One `readv`: header → `buffer[0..<10]`, packet → `slot`, the rest → `buffer` after the
    /// slot's share. Returns the bytes read (header included), nil when nothing is waiting.
    func read(_ fd: Int32, slot: UnsafeMutableRawBufferPointer, _ what: @autoclosure () -> String)
        throws(SystemError) -> Int?
    {
        let share = min(slot.count, buffer.count - VirtioNetHeader.size)
        let rest = VirtioNetHeader.size + share
        iovecs[0] = iovec(iov_base: buffer.baseAddress, iov_len: VirtioNetHeader.size)
        iovecs[1] = iovec(iov_base: slot.baseAddress, iov_len: share)
        iovecs[2] = iovec(iov_base: buffer.baseAddress! + rest, iov_len: buffer.count - rest)
        let r = try Sys.shimNonblocking(what()) { Int32(truncatingIfNeeded: tv_readv(fd, iovecs, 3)) }
        return r.map(Int.init)
    }

    /// Puts `share` (the slot's part of the last read) in front of the rest: the packet of `total`
    /// bytes (default: just the share) is then contiguous in ``packet``.
    func stage(_ share: UnsafeRawBufferPointer, total: Int? = nil) {
        (buffer.baseAddress! + VirtioNetHeader.size).copyMemory(from: share.baseAddress!, byteCount: share.count)
        length = total ?? share.count
    }

    /// The staged packet after the header.
    var packet: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: buffer[VirtioNetHeader.size..<(VirtioNetHeader.size + length)])
    }
}

/// A batch's scratch for offloaded TUN writes: the coalescing plan, the packets it reads and the
/// iovecs one group's writev needs. Belongs to the batch (one thread at a time).
final class TunWriteScratch {
    let coalescer: TUNCoalescer
    let packets: UnsafeMutablePointer<UnsafeMutableRawBufferPointer>
    let iovecs: UnsafeMutablePointer<iovec>
    let header: UnsafeMutableRawPointer

    init(capacity: Int) {
        coalescer = TUNCoalescer(capacity: capacity)
        packets = .allocate(capacity: capacity)
        packets.initialize(repeating: UnsafeMutableRawBufferPointer(start: nil, count: 0), count: capacity)
        iovecs = .allocate(capacity: capacity + 1)
        iovecs.initialize(repeating: iovec(), count: capacity + 1)
        header = .allocate(byteCount: VirtioNetHeader.size, alignment: 8)
    }

    deinit {
        packets.deallocate()
        iovecs.deallocate()
        header.deallocate()
    }
}
