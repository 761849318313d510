import Core
import CShims
import Glibc
import Packet

/// A preallocated batch of packet buffers, the unit every TUN and UDP read and write moves.
///
/// Memory is allocated once, in `init`, and never again: `capacity` slots of `slotSize` bytes in one
/// block, per-slot `offsets`, `lengths` and `endpoints`, and the `mmsghdr`/`iovec`/`sockaddr_storage`
/// arrays that `recvmmsg(2)`/`sendmmsg(2)` need. Reading and writing through a batch allocates nothing.
///
/// Slot `i` holds one packet at `offsets[i] ..< offsets[i] + lengths[i]` inside the slot. Reads place
/// data at `headroom` (so a caller can prepend a header in place, e.g. WireGuard's 16-byte data header)
/// and set `count`; writes send slots `0 ..< count` from their offsets, so a caller that decrypted in
/// place just moves `offsets[i]` past the header instead of copying.
///
/// A batch belongs to one thread at a time; it is a class only so that it is shared by reference.
public final class PacketBatch {
    /// Number of slots.
    public let capacity: Int
    /// Bytes per slot (headroom included).
    public let slotSize: Int
    /// Where reads place the first byte of a packet inside a slot.
    public let headroom: Int
    /// Slots in use: `0 ..< count`. Reads set it; set it yourself before a write.
    public var count: Int = 0
    /// The first byte of slot 0; slot `i` starts at `storage + i * slotSize`.
    public let storage: UnsafeMutableRawPointer
    /// Offset of each slot's packet inside the slot.
    public let offsets: UnsafeMutableBufferPointer<Int>
    /// Length of each slot's packet.
    public let lengths: UnsafeMutableBufferPointer<Int>
    /// UDP only: the remote endpoint (source after a receive, destination for a send).
    public let endpoints: UnsafeMutableBufferPointer<Endpoint>

    // recvmmsg/sendmmsg scaffolding, preallocated with the batch.
    let messages: UnsafeMutableBufferPointer<tv_mmsghdr>
    let iovecs: UnsafeMutableBufferPointer<iovec>
    let addresses: UnsafeMutableBufferPointer<sockaddr_storage>
    // UDP GSO: one control message per slot (used when the slot leads a segmented send) and the
    // number of slots each built message carries.
    let controls: UnsafeMutableRawPointer
    let groupSlots: UnsafeMutableBufferPointer<Int32>
    /// Scratch for offloaded TUN writes (coalescing plan, iovecs), made on first use by the thread
    /// that owns the batch.
    var tunWriteScratch: TunWriteScratch?

    /// A batch of `capacity` slots of `slotSize` bytes, reads landing at `headroom`.
    /// - Precondition: `capacity > 0`, `0 <= headroom < slotSize`.
    public init(capacity: Int, slotSize: Int, headroom: Int = 0) {
        precondition(capacity > 0 && headroom >= 0 && headroom < slotSize, "PacketBatch: bad geometry")
        self.capacity = capacity
        self.slotSize = slotSize
        self.headroom = headroom
        storage = UnsafeMutableRawPointer.allocate(byteCount: capacity * slotSize, alignment: 64)
        storage.initializeMemory(as: UInt8.self, repeating: 0, count: capacity * slotSize)
        offsets = .allocate(capacity: capacity)
        offsets.initialize(repeating: headroom)
        lengths = .allocate(capacity: capacity)
        lengths.initialize(repeating: 0)
        endpoints = .allocate(capacity: capacity)
        endpoints.initialize(repeating: Endpoint(address: IPAddressV4Any, port: 0))
        messages = .allocate(capacity: capacity)
        messages.initialize(repeating: tv_mmsghdr())
        iovecs = .allocate(capacity: capacity)
        iovecs.initialize(repeating: iovec())
        addresses = .allocate(capacity: capacity)
        addresses.initialize(repeating: sockaddr_storage())
        controls = UnsafeMutableRawPointer.allocate(byteCount: capacity * PacketBatch.controlSpace, alignment: 8)
        controls.initializeMemory(as: UInt8.self, repeating: 0, count: capacity * PacketBatch.controlSpace)
        groupSlots = .allocate(capacity: capacity)
        groupSlots.initialize(repeating: 0)
    }

    /// Bytes of one slot's control buffer (a UDP_SEGMENT cmsg).
    static let controlSpace = tv_udp_segment_cmsg_space()

    deinit {
        storage.deallocate()
        offsets.deallocate()
        lengths.deallocate()
        endpoints.deallocate()
        messages.deallocate()
        iovecs.deallocate()
        addresses.deallocate()
        controls.deallocate()
        groupSlots.deallocate()
    }

    /// The whole of slot `i` (`slotSize` bytes), for building a packet in place.
    @inlinable public func slot(_ i: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: storage + i * slotSize, count: slotSize)
    }

    /// The packet in slot `i`: `lengths[i]` bytes from `offsets[i]`.
    @inlinable public func packet(_ i: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: storage + i * slotSize + offsets[i], count: lengths[i])
    }

    /// Room for a packet read into slot `i` (from `headroom` to the end of the slot).
    @inlinable public func readRoom(_ i: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: storage + i * slotSize + headroom, count: slotSize - headroom)
    }

    /// Copies `bytes` into slot `i` at `headroom`, sets its offset and length (for tests and
    /// builders, not the hot path). Returns false when it does not fit.
    @discardableResult
    public func set(_ i: Int, bytes: some Collection<UInt8>, endpoint: Endpoint? = nil) -> Bool {
        guard bytes.count <= slotSize - headroom else { return false }
        let room = readRoom(i)
        _ = room.initializeMemory(as: UInt8.self, from: bytes)
        offsets[i] = headroom
        lengths[i] = bytes.count
        if let endpoint { endpoints[i] = endpoint }
        return true
    }

    /// Copies contiguous `bytes` into slot `i` (one memcpy; the generic `set` above goes element by
    /// element through the Collection witnesses, ≈ 40 ns a byte unspecialised across modules, which
    /// made `tunnelbench blast` a 15 kpps generator at 1392 B). Returns false when it does not fit.
    @discardableResult
    public func set(_ i: Int, bytes: [UInt8], endpoint: Endpoint? = nil) -> Bool {
        bytes.withUnsafeBytes { set(i, raw: $0, endpoint: endpoint) }
    }

    /// Copies `raw` into slot `i` at `headroom` (one memcpy), sets its offset and length.
    @discardableResult
    public func set(_ i: Int, raw: UnsafeRawBufferPointer, endpoint: Endpoint? = nil) -> Bool {
        guard raw.count <= slotSize - headroom else { return false }
        if let from = raw.baseAddress, raw.count > 0 { readRoom(i).baseAddress!.copyMemory(from: from, byteCount: raw.count) }
        offsets[i] = headroom
        lengths[i] = raw.count
        if let endpoint { endpoints[i] = endpoint }
        return true
    }

    /// Sets `count` to 0 and every offset back to `headroom`.
    public func reset() {
        count = 0
        for i in 0..<capacity { offsets[i] = headroom; lengths[i] = 0 }
    }

    /// A copy of packet `i`'s bytes (allocates; for tests and diagnostics).
    public func bytes(_ i: Int) -> [UInt8] { Array(UnsafeRawBufferPointer(packet(i))) }
}

/// 0.0.0.0, the placeholder endpoint address of an unused slot.
let IPAddressV4Any = IPAddress(v4: 0)
