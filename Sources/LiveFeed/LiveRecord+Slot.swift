import Core
/// Encoding of a `LiveRecord` into a 128-byte ring slot and back (docs/ring.md, "Slot").
extension LiveRecord {
    /// Slot offsets (bytes from the start of the slot).
    enum Slot {
        static let time = 0
        static let flowID = 8
        static let source = 16
        static let destination = 32
        static let sourcePort = 48
        static let destinationPort = 50
        static let length = 52
        static let kind = 56
        static let direction = 57
        static let ipProtocol = 58
        static let ipVersion = 59
        static let tcpFlags = 60
        static let verdict = 61
        static let reserved62 = 62
        static let ruleIndex = 64
        static let peerIndex = 68
        static let peerName = 72
        static let captureFileSequence = 88
        static let reserved92 = 92
        static let captureOffset = 96
        static let detail = 104
        static let detail2 = 112
        static let policyGeneration = 120
    }

    /// Writes the record into `slot` (128 bytes, 8-byte aligned). Every byte is written.
    @inline(__always)
    func encode(into slot: UnsafeMutableRawPointer) {
        slot.storeBytes(of: timeNanoseconds.littleEndian, toByteOffset: Slot.time, as: UInt64.self)
        slot.storeBytes(of: flowID.littleEndian, toByteOffset: Slot.flowID, as: UInt64.self)
        if kind == .flowHost {
            // No addresses: the four words hold host bytes 0–31 (LiveRecord+Host), as they are.
            slot.storeBytes(of: sourceHigh.littleEndian, toByteOffset: Slot.source, as: UInt64.self)
            slot.storeBytes(of: sourceLow.littleEndian, toByteOffset: Slot.source + 8, as: UInt64.self)
            slot.storeBytes(of: destinationHigh.littleEndian, toByteOffset: Slot.destination, as: UInt64.self)
            slot.storeBytes(of: destinationLow.littleEndian, toByteOffset: Slot.destination + 8, as: UInt64.self)
        } else if ipVersion == 6 {
            slot.storeBytes(of: sourceHigh.bigEndian, toByteOffset: Slot.source, as: UInt64.self)
            slot.storeBytes(of: sourceLow.bigEndian, toByteOffset: Slot.source + 8, as: UInt64.self)
            slot.storeBytes(of: destinationHigh.bigEndian, toByteOffset: Slot.destination, as: UInt64.self)
            slot.storeBytes(of: destinationLow.bigEndian, toByteOffset: Slot.destination + 8, as: UInt64.self)
        } else {
            // IPv4: the four address bytes first, then zeros.
            slot.storeBytes(of: UInt64(UInt32(truncatingIfNeeded: sourceLow).bigEndian).littleEndian,
                            toByteOffset: Slot.source, as: UInt64.self)
            slot.storeBytes(of: UInt64(0), toByteOffset: Slot.source + 8, as: UInt64.self)
            slot.storeBytes(of: UInt64(UInt32(truncatingIfNeeded: destinationLow).bigEndian).littleEndian,
                            toByteOffset: Slot.destination, as: UInt64.self)
            slot.storeBytes(of: UInt64(0), toByteOffset: Slot.destination + 8, as: UInt64.self)
        }
        slot.storeBytes(of: sourcePort.littleEndian, toByteOffset: Slot.sourcePort, as: UInt16.self)
        slot.storeBytes(of: destinationPort.littleEndian, toByteOffset: Slot.destinationPort, as: UInt16.self)
        slot.storeBytes(of: length.littleEndian, toByteOffset: Slot.length, as: UInt32.self)
        slot.storeBytes(of: kind.rawValue, toByteOffset: Slot.kind, as: UInt8.self)
        slot.storeBytes(of: direction?.rawValue ?? 0xFF, toByteOffset: Slot.direction, as: UInt8.self)
        slot.storeBytes(of: ipProtocol, toByteOffset: Slot.ipProtocol, as: UInt8.self)
        slot.storeBytes(of: ipVersion, toByteOffset: Slot.ipVersion, as: UInt8.self)
        slot.storeBytes(of: tcpFlags, toByteOffset: Slot.tcpFlags, as: UInt8.self)
        slot.storeBytes(of: verdict?.rawValue ?? 0xFF, toByteOffset: Slot.verdict, as: UInt8.self)
        slot.storeBytes(of: UInt16(0), toByteOffset: Slot.reserved62, as: UInt16.self)
        slot.storeBytes(of: ruleIndex.littleEndian, toByteOffset: Slot.ruleIndex, as: UInt32.self)
        slot.storeBytes(of: peerIndex.littleEndian, toByteOffset: Slot.peerIndex, as: UInt32.self)
        slot.storeBytes(of: peerName.first.littleEndian, toByteOffset: Slot.peerName, as: UInt64.self)
        slot.storeBytes(of: peerName.second.littleEndian, toByteOffset: Slot.peerName + 8, as: UInt64.self)
        slot.storeBytes(of: captureFileSequence.littleEndian, toByteOffset: Slot.captureFileSequence, as: UInt32.self)
        slot.storeBytes(of: UInt32(0), toByteOffset: Slot.reserved92, as: UInt32.self)
        slot.storeBytes(of: captureOffset.littleEndian, toByteOffset: Slot.captureOffset, as: UInt64.self)
        slot.storeBytes(of: detail.littleEndian, toByteOffset: Slot.detail, as: UInt64.self)
        slot.storeBytes(of: detail2.littleEndian, toByteOffset: Slot.detail2, as: UInt64.self)
        slot.storeBytes(of: policyGeneration.littleEndian, toByteOffset: Slot.policyGeneration, as: UInt64.self)
    }

    /// Reads a record from `slot` (128 bytes, 8-byte aligned).
    @inline(__always)
    init(slot: UnsafeRawPointer) {
        @inline(__always) func u64(_ o: Int) -> UInt64 { UInt64(littleEndian: slot.load(fromByteOffset: o, as: UInt64.self)) }
        @inline(__always) func u32(_ o: Int) -> UInt32 { UInt32(littleEndian: slot.load(fromByteOffset: o, as: UInt32.self)) }
        @inline(__always) func u16(_ o: Int) -> UInt16 { UInt16(littleEndian: slot.load(fromByteOffset: o, as: UInt16.self)) }
        @inline(__always) func u8(_ o: Int) -> UInt8 { slot.load(fromByteOffset: o, as: UInt8.self) }
        @inline(__always) func be64(_ o: Int) -> UInt64 { UInt64(bigEndian: slot.load(fromByteOffset: o, as: UInt64.self)) }
        @inline(__always) func be32(_ o: Int) -> UInt32 { UInt32(bigEndian: slot.load(fromByteOffset: o, as: UInt32.self)) }
        timeNanoseconds = u64(Slot.time)
        flowID = u64(Slot.flowID)
        ipVersion = u8(Slot.ipVersion)
        kind = LiveEventKind(rawValue: u8(Slot.kind))
        if kind == .flowHost {
            sourceHigh = u64(Slot.source)
            sourceLow = u64(Slot.source + 8)
            destinationHigh = u64(Slot.destination)
            destinationLow = u64(Slot.destination + 8)
        } else if ipVersion == 6 {
            sourceHigh = be64(Slot.source)
            sourceLow = be64(Slot.source + 8)
            destinationHigh = be64(Slot.destination)
            destinationLow = be64(Slot.destination + 8)
        } else {
            sourceHigh = 0
            sourceLow = UInt64(be32(Slot.source))
            destinationHigh = 0
            destinationLow = UInt64(be32(Slot.destination))
        }
        sourcePort = u16(Slot.sourcePort)
        destinationPort = u16(Slot.destinationPort)
        length = u32(Slot.length)
        direction = Direction(rawValue: u8(Slot.direction))  // nil: a byte no tunneld writes
        ipProtocol = u8(Slot.ipProtocol)
        tcpFlags = u8(Slot.tcpFlags)
        verdict = Verdict(rawValue: u8(Slot.verdict))
        ruleIndex = u32(Slot.ruleIndex)
        peerIndex = u32(Slot.peerIndex)
        peerName = LivePeerName(first: u64(Slot.peerName), second: u64(Slot.peerName + 8))
        captureFileSequence = u32(Slot.captureFileSequence)
        captureOffset = u64(Slot.captureOffset)
        detail = u64(Slot.detail)
        detail2 = u64(Slot.detail2)
        policyGeneration = u64(Slot.policyGeneration)
    }

    /// The record encoded as the 128 bytes of a slot (tests, golden layout checks).
    public var slotBytes: [UInt8] {
        var bytes = [UInt8](repeating: 0, count: RingLayout.slotSize)
        bytes.withUnsafeMutableBytes { raw in
            // Copy through an aligned temporary: Array storage is 16-byte aligned on 64-bit.
            encode(into: raw.baseAddress!)
        }
        return bytes
    }

    /// Decodes the 128 bytes of a slot (tests, offline readers). Nil when `bytes` is shorter.
    public init?(slotBytes bytes: [UInt8]) {
        guard bytes.count >= RingLayout.slotSize else { return nil }
        let aligned = UnsafeMutableRawPointer.allocate(byteCount: RingLayout.slotSize, alignment: 8)
        defer { aligned.deallocate() }
        bytes.withUnsafeBytes { aligned.copyMemory(from: $0.baseAddress!, byteCount: RingLayout.slotSize) }
        self.init(slot: UnsafeRawPointer(aligned))
    }
}
