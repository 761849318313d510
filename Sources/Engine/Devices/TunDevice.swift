import SystemIO
import Core
import Runtime
/// A layer-3 packet device: the gateway's side of the kernel's TUN interface, or an in-memory fake
/// (`TestSupport.ChannelTun`). Packets are raw IPv4/IPv6 datagrams with no extra header
/// (`IFF_NO_PI`).
///
/// Threading: one thread reads (``readPackets(into:)`` + ``waitReadable(timeoutMilliseconds:)``) and
/// one thread writes (``writePackets(_:)``) at a time; ``close()`` may be called from any thread and
/// wakes the reader. Reads and writes never block and never allocate.
public protocol TunDevice: AnyObject, Sendable {
    /// The interface name, e.g. `tv0`.
    var name: String { get }
    /// The MTU the device was configured with (bytes of an IP packet).
    var mtu: Int { get }

    /// Reads up to `batch.capacity` packets into slots `0 ..< n` at the batch's headroom, sets
    /// `batch.count = n`, and returns `n`. Returns 0 at once when no packet is waiting. A packet
    /// longer than a slot is truncated by the kernel; such packets are counted in
    /// ``TunDeviceCounters``, not returned.
    func readPackets(into batch: PacketBatch) throws(SystemError) -> Int

    /// Writes packets `0 ..< batch.count` (each from its offset and length) and returns how many
    /// the device took. Stops early (returns fewer) when the device would block. A packet the
    /// kernel refuses (`EINVAL` for a malformed header) is skipped and counted, not thrown.
    func writePackets(_ batch: PacketBatch) throws(SystemError) -> Int

    /// Blocks until a packet is probably readable, the timeout passes (-1 = forever), or the
    /// device is closed.
    func waitReadable(timeoutMilliseconds: Int32) throws(SystemError) -> WaitResult

    /// Closes the device and wakes a waiting reader with `.closed`. Idempotent.
    func close()

    /// Packets dropped and offload use so far.
    var counters: TunDeviceCounters { get }

    /// The offloads in effect, for status (`csum tso4 tso6 uso4 uso6`, `none`, `off`).
    var offloadDescription: String { get }
}

extension TunDevice {
    public var counters: TunDeviceCounters { TunDeviceCounters() }
    public var offloadDescription: String { "off" }
}
