import CShims
import Glibc
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
/// There is no batched read for TUN without `IFF_VNET_HDR` offloads: each packet is one
/// `read(2)`/`write(2)`; the batch amortises the wait and the caller's bookkeeping.
public final class LinuxTun: TunDevice {
    /// The kernel's name for the interface (the requested one, or `tunN` when none was given).
    public let name: String
    /// The MTU the caller configured (informational; set it with the configurator).
    public let mtu: Int
    /// The TUN descriptor (nonblocking, close-on-exec). Valid until ``close()``.
    public let descriptor: Int32
    private let shutdown: EventNotifier
    private let closed = Atomic<Bool>(false)
    private let truncatedReads = Atomic<UInt64>(0)
    private let refusedWrites = Atomic<UInt64>(0)

    /// Opens `/dev/net/tun` and attaches to interface `name` (at most 15 bytes; empty = kernel picks).
    /// With `multiQueue`, the interface is created with `IFF_MULTI_QUEUE` and each further
    /// `LinuxTun` opened on the same name is one more queue (one reader thread per queue).
    /// Needs CAP_NET_ADMIN. Throws e.g. `open TUN tv0: Operation not permitted (EPERM)`.
    public init(name: String, mtu: Int, multiQueue: Bool = false) throws(SystemError) {
        var out = [CChar](repeating: 0, count: Int(TV_IFNAMSIZ))
        descriptor = try Sys.shim("open TUN \(name.isEmpty ? "(any)" : name)") {
            name.withCString { tv_tun_open($0, multiQueue ? 1 : 0, &out) }
        }
        do {
            shutdown = try EventNotifier()
        } catch {
            Sys.close(descriptor)
            throw error
        }
        self.name = String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        self.mtu = mtu
    }

    deinit {
        close()
        Sys.close(descriptor)
    }

    /// Packets dropped instead of thrown so far.
    public var counters: TunDeviceCounters {
        var c = TunDeviceCounters()
        c.truncatedReads = truncatedReads.load(ordering: .relaxed)
        c.refusedWrites = refusedWrites.load(ordering: .relaxed)
        return c
    }

    public func readPackets(into batch: PacketBatch) throws(SystemError) -> Int {
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

    public func waitReadable(timeoutMilliseconds: Int32) throws(SystemError) -> WaitResult {
        if closed.load(ordering: .relaxed) { return .closed }
        return try Readiness.wait((descriptor, nil), shutdown, timeoutMilliseconds: timeoutMilliseconds)
    }

    public func close() {
        if closed.exchange(true, ordering: .relaxed) { return }
        shutdown.signal()
    }
}
