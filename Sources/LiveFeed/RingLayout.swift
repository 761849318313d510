import Core
/// Byte offsets and constants of the `live.ring` file (docs/ring.md documents them byte by byte).
///
/// The file is a 256-byte header followed by `slotCount` slots of `slotSize` bytes. Integers are
/// little-endian. The header keeps the producer-written words (`head`, `dropped`, the futex word)
/// and the consumer-written words (`tail`, `waiting`) on different cache lines, apart from the
/// read-only geometry, so the two processes do not bounce one line between their cores.
public enum RingLayout {
    /// `"TVR1"` as it appears in the file's first four bytes (read as a little-endian UInt32).
    public static let magic: UInt32 = 0x3152_5654
    /// The layout version this code writes and reads.
    public static let version: UInt32 = 1
    /// Bytes before the first slot.
    public static let headerSize = 256
    /// Bytes per slot in version 1 (two cache lines).
    public static let slotSize = 128
    /// Smallest slot count a producer accepts.
    public static let minimumSlotCount = 2
    /// Largest slot count a producer accepts (128 MiB of slots).
    public static let maximumSlotCount = 1 << 20

    // Line 0: written once by the producer before the file is visible.
    static let magicOffset = 0
    static let versionOffset = 4
    static let headerSizeOffset = 8
    static let slotSizeOffset = 12
    static let slotCountOffset = 16
    static let flagsOffset = 20
    static let generationOffset = 24
    static let producerPIDOffset = 32
    static let creationTimeOffset = 40
    // Line 1: producer-written.
    static let headOffset = 64
    static let droppedOffset = 72
    static let futexOffset = 80
    static let stateOffset = 84
    // Line 2: consumer-written.
    static let tailOffset = 128
    static let waitingOffset = 136
    static let consumerPIDOffset = 140

    /// `state` value while the producer is running.
    static let stateOpen: UInt32 = 0
    /// `state` value once the producer has closed the ring or replaced the file.
    static let stateClosed: UInt32 = 1

    /// Total file size for a geometry.
    public static func fileSize(slotCount: Int, slotSize: Int = slotSize) -> Int {
        headerSize + slotCount * slotSize
    }
}
