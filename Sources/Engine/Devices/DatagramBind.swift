import SystemIO
import Core
import Runtime
/// The gateway's UDP side: where WireGuard datagrams arrive from and leave to peers. The Linux
/// implementation is ``LinuxDatagramBind`` (one IPv4 and one IPv6 socket); tests use
/// `TestSupport.ChannelBind` (binds connected in memory, like wireguard-go's `conn/bindtest`).
///
/// Threading: one thread receives (``receive(into:)`` + ``waitReadable(timeoutMilliseconds:)``);
/// any number of threads send at once, each with its own ``PacketBatch`` (the engine's inbound,
/// handshake, outbound and timer threads all do): an implementation keeps no per-send state of its
/// own outside the batch (the Linux one issues one `sendmmsg(2)` per run, which the kernel
/// serialises per socket). ``close()`` may be called from any thread and wakes the receiver.
/// Receive and send never block and never allocate.
public protocol DatagramBind: AnyObject, Sendable {
    /// The bound UDP port (the actual one when port 0 was asked for).
    var port: UInt16 { get }

    /// Receives up to `batch.capacity` datagrams into slots `0 ..< n` (at the batch's headroom,
    /// sources in `batch.endpoints`), sets `batch.count = n` and returns `n`; 0 at once when none is
    /// waiting. Datagrams longer than a slot are dropped and counted, not returned.
    func receive(into batch: PacketBatch) throws(SystemError) -> Int

    /// Sends slots `start ..< batch.count`, slot `i` to `batch.endpoints[i]`, and returns how many
    /// slots it consumed from `start`. A datagram the kernel refuses (unreachable, no socket of that
    /// family, too big) is consumed and counted, not thrown. Returns fewer than asked only when the
    /// socket would block: the caller retries the rest later or drops it.
    func send(_ batch: PacketBatch, from start: Int) throws(SystemError) -> Int

    /// Blocks until a datagram is probably readable, the timeout passes (-1 = forever), or the bind
    /// is closed.
    func waitReadable(timeoutMilliseconds: Int32) throws(SystemError) -> WaitResult

    /// Closes the bind and wakes a waiting receiver with `.closed`. Idempotent.
    func close()

    /// True while sends carry several equal-sized datagrams per message (UDP GSO).
    var segmentation: Bool { get }

    /// True when receives take coalesced runs of datagrams (UDP GRO); they still arrive one per slot.
    var receiveCoalescing: Bool { get }

    /// Coalesced messages received so far and the datagrams they carried.
    var coalescedReceives: (messages: UInt64, datagrams: UInt64) { get }
}

extension DatagramBind {
    public var segmentation: Bool { false }
    public var receiveCoalescing: Bool { false }
    public var coalescedReceives: (messages: UInt64, datagrams: UInt64) { (0, 0) }

    /// Sends all of `batch` (slots `0 ..< batch.count`); see ``DatagramBind/send(_:from:)``.
    public func send(_ batch: PacketBatch) throws(SystemError) -> Int {
        try send(batch, from: 0)
    }
}
