/// A bounded FIFO of packets in one contiguous byte ring, allocated once in `init` (the
/// per-peer shaping queue). Records are a 4-byte length and the packet, padded to 4 bytes; a
/// record that does not fit before the ring's end wraps to its start (a marker says so). Pure,
/// not thread-safe, never allocates after `init`.
public final class PacketFIFO {
    /// Ring bytes.
    public let ringBytes: Int
    /// Most packet bytes (sum of lengths) held at once.
    public let limitBytes: Int
    /// Packets held.
    public private(set) var count = 0
    /// Packet bytes held (sum of lengths).
    public private(set) var bytes = 0

    @usableFromInline let ring: UnsafeMutableRawPointer
    @usableFromInline var head = 0
    @usableFromInline var tail = 0
    @usableFromInline static let wrapMarker: UInt32 = .max

    /// A queue of at most `limitBytes` packet bytes; the ring adds room for record headers
    /// (small packets) and one wrap. - Precondition: `limitBytes > 0`.
    public init(limitBytes: Int, maxPacket: Int = 65_535) {
        precondition(limitBytes > 0, "PacketFIFO: limit must be positive")
        self.limitBytes = limitBytes
        ringBytes = (limitBytes + limitBytes / 4 + maxPacket + 8 + 3) & ~3
        ring = .allocate(byteCount: ringBytes, alignment: 8)
    }

    deinit { ring.deallocate() }

    /// Bytes this queue holds allocated.
    public var memoryBytes: Int { ringBytes }

    /// Length of the oldest packet, nil when empty.
    @inlinable public var headLength: Int? {
        guard count > 0 else { return nil }
        var h = head
        if ringBytes - h < 4 { h = 0 }
        var len = ring.load(fromByteOffset: h, as: UInt32.self)
        if len == PacketFIFO.wrapMarker { len = ring.load(fromByteOffset: 0, as: UInt32.self) }
        return Int(len)
    }

    /// Appends a copy of `packet`; false (nothing changes) when it would pass `limitBytes` or
    /// the ring has no room.
    @discardableResult
    public func push(_ packet: UnsafeRawBufferPointer) -> Bool {
        let len = packet.count
        guard len < Int(UInt32.max), bytes + len <= limitBytes else { return false }
        let need = 4 + ((len + 3) & ~3)
        if count == 0 { head = 0; tail = 0 }
        var at: Int
        if count > 0 && tail == head { return false }  // exactly full
        if tail >= head {
            if ringBytes - tail >= need {
                at = tail
            } else if need <= head {
                if ringBytes - tail >= 4 { ring.storeBytes(of: PacketFIFO.wrapMarker, toByteOffset: tail, as: UInt32.self) }
                at = 0
            } else {
                return false
            }
        } else {
            guard head - tail >= need else { return false }
            at = tail
        }
        ring.storeBytes(of: UInt32(len), toByteOffset: at, as: UInt32.self)
        if len > 0 { (ring + at + 4).copyMemory(from: packet.baseAddress!, byteCount: len) }
        at += need
        tail = at == ringBytes ? 0 : at
        count += 1
        bytes += len
        return true
    }

    /// Removes the oldest packet and hands it to `body` (valid only during the call); false when empty.
    @discardableResult
    public func pop(_ body: (UnsafeRawBufferPointer) -> Void) -> Bool {
        guard count > 0 else { return false }
        if ringBytes - head < 4 { head = 0 }
        var len = ring.load(fromByteOffset: head, as: UInt32.self)
        if len == PacketFIFO.wrapMarker {
            head = 0
            len = ring.load(fromByteOffset: 0, as: UInt32.self)
        }
        body(UnsafeRawBufferPointer(start: ring + head + 4, count: Int(len)))
        head += 4 + ((Int(len) + 3) & ~3)
        if head == ringBytes { head = 0 }
        count -= 1
        bytes -= Int(len)
        if count == 0 { head = 0; tail = 0 }
        return true
    }

    /// Drops everything held.
    public func removeAll() {
        count = 0
        bytes = 0
        head = 0
        tail = 0
    }
}
