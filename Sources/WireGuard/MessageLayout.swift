// Wire layout of the four WireGuard messages (whitepaper §5.4.2–§5.4.7).

/// Offsets and sizes of message fields. All integers are little-endian.
public enum MessageLayout {
    /// Handshake initiation: type, sender, ephemeral(32), static(32+16), timestamp(12+16), mac1, mac2.
    public enum Initiation {
        /// `size` field offset (or total size).
        public static let size = 148
        /// `sender` field offset (or total size).
        public static let sender = 4
        /// `ephemeral` field offset (or total size).
        public static let ephemeral = 8
        /// `encryptedStatic` field offset (or total size).
        public static let encryptedStatic = 40
        /// `encryptedTimestamp` field offset (or total size).
        public static let encryptedTimestamp = 88
        /// `mac1` field offset (or total size).
        public static let mac1 = 116
        /// `mac2` field offset (or total size).
        public static let mac2 = 132
    }

    /// Handshake response: type, sender, receiver, ephemeral(32), empty(0+16), mac1, mac2.
    public enum Response {
        /// `size` field offset (or total size).
        public static let size = 92
        /// `sender` field offset (or total size).
        public static let sender = 4
        /// `receiver` field offset (or total size).
        public static let receiver = 8
        /// `ephemeral` field offset (or total size).
        public static let ephemeral = 12
        /// `encryptedNothing` field offset (or total size).
        public static let encryptedNothing = 44
        /// `mac1` field offset (or total size).
        public static let mac1 = 60
        /// `mac2` field offset (or total size).
        public static let mac2 = 76
    }

    /// Cookie reply: type, receiver, nonce(24), encrypted cookie(16+16).
    public enum CookieReply {
        /// `size` field offset (or total size).
        public static let size = 64
        /// `receiver` field offset (or total size).
        public static let receiver = 4
        /// `nonce` field offset (or total size).
        public static let nonce = 8
        /// `encryptedCookie` field offset (or total size).
        public static let encryptedCookie = 32
    }

    /// Transport data: type, receiver, counter(8), encrypted padded packet + tag.
    public enum Transport {
        /// Header length; also the headroom a caller leaves in front of plaintext for `encrypt`.
        /// `headerSize` field offset (or total size).
        public static let headerSize = 16
        /// `receiver` field offset (or total size).
        public static let receiver = 4
        /// `counter` field offset (or total size).
        public static let counter = 8
        /// The smallest transport message: a keepalive (header + empty ciphertext + tag).
        /// `minimumSize` field offset (or total size).
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
