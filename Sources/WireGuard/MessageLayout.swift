// Wire layout of the four WireGuard messages (whitepaper §5.4.2–§5.4.7).
import Core

/// Offsets and sizes of message fields. All integers are little-endian.
public enum MessageLayout {
    /// Handshake initiation: type, sender, ephemeral(32), static(32+16), timestamp(12+16), mac1, mac2.
    public enum Initiation {
        /// Total message length in bytes.
        public static let size = 148
        /// Byte offset of the `sender` field.
        public static let sender = 4
        /// Byte offset of the `ephemeral` field.
        public static let ephemeral = 8
        /// Byte offset of the `encryptedStatic` field.
        public static let encryptedStatic = 40
        /// Byte offset of the `encryptedTimestamp` field.
        public static let encryptedTimestamp = 88
        /// Byte offset of the `mac1` field.
        public static let mac1 = 116
        /// Byte offset of the `mac2` field.
        public static let mac2 = 132
    }

    /// Handshake response: type, sender, receiver, ephemeral(32), empty(0+16), mac1, mac2.
    public enum Response {
        /// Total message length in bytes.
        public static let size = 92
        /// Byte offset of the `sender` field.
        public static let sender = 4
        /// Byte offset of the `receiver` field.
        public static let receiver = 8
        /// Byte offset of the `ephemeral` field.
        public static let ephemeral = 12
        /// Byte offset of the `encryptedNothing` field.
        public static let encryptedNothing = 44
        /// Byte offset of the `mac1` field.
        public static let mac1 = 60
        /// Byte offset of the `mac2` field.
        public static let mac2 = 76
    }

    /// Cookie reply: type, receiver, nonce(24), encrypted cookie(16+16).
    public enum CookieReply {
        /// Total message length in bytes.
        public static let size = 64
        /// Byte offset of the `receiver` field.
        public static let receiver = 4
        /// Byte offset of the `nonce` field.
        public static let nonce = 8
        /// Byte offset of the `encryptedCookie` field.
        public static let encryptedCookie = 32
    }

    /// Transport data: type, receiver, counter(8), encrypted padded packet + tag.
    public enum Transport {
        /// Header length; also the headroom a caller leaves in front of plaintext for `encrypt`.
        /// Byte offset of the `headerSize` field.
        public static let headerSize = 16
        /// Byte offset of the `receiver` field.
        public static let receiver = 4
        /// Byte offset of the `counter` field.
        public static let counter = 8
        /// The smallest transport message: a keepalive (header + empty ciphertext + tag).
        /// Byte offset of the `minimumSize` field.
        public static let minimumSize = 32
    }

    @inline(__always)
    static func readLE32(_ p: UnsafeRawPointer, _ offset: Int) -> UInt32 {
        UInt32(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    @inline(__always)
    static func readLE64(_ p: UnsafeRawPointer, _ offset: Int) -> UInt64 {
        UInt64(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    @inline(__always)
    static func writeLE32(_ p: UnsafeMutableRawPointer, _ offset: Int, _ v: UInt32) {
        p.storeBytes(of: v.littleEndian, toByteOffset: offset, as: UInt32.self)
    }

    @inline(__always)
    static func writeLE64(_ p: UnsafeMutableRawPointer, _ offset: Int, _ v: UInt64) {
        p.storeBytes(of: v.littleEndian, toByteOffset: offset, as: UInt64.self)
    }
}

extension MessageLayout {
    /// Reads a little-endian UInt64 at `offset` of a byte array (tests, tools).
    public static func readLE64(_ bytes: [UInt8], _ offset: Int) -> UInt64 {
        var v: UInt64 = 0
        for i in (0..<8).reversed() { v = v << 8 | UInt64(bytes[offset + i]) }
        return v
    }

    /// Writes a little-endian UInt64 at `offset` of a byte array (tests, tools).
    public static func writeLE64Array(_ bytes: inout [UInt8], _ offset: Int, _ v: UInt64) {
        for i in 0..<8 { bytes[offset + i] = UInt8(truncatingIfNeeded: v >> (8 * UInt64(i))) }
    }
}
