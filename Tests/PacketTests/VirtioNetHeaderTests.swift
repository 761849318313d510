import Core
import Testing
@testable import Packet

@Suite struct VirtioNetHeaderTests {
    /// A TSO read as the kernel hands it over: NEEDS_CSUM, TCPv4, hdr_len 54 (the kernel counts
    /// an Ethernet header here even for TUN), gso_size 1460, csum_start 20, csum_offset 16.
    static let known: [UInt8] = [0x01, 0x01, 0x36, 0x00, 0xB4, 0x05, 0x14, 0x00, 0x10, 0x00]
    static let knownHeader = VirtioNetHeader(flags: 1, gsoType: 1, headerLength: 54, gsoSize: 1460,
                                             checksumStart: 20, checksumOffset: 16)

    @Test func decodesKnownBytes() throws {
        let h = try decodeHeader(Self.known).get()
        #expect(h == Self.knownHeader)
        #expect(h.flags & VirtioNetHeader.needsChecksum != 0 && h.gsoType == VirtioNetHeader.gsoTCPv4)
    }

    @Test func encodesKnownBytes() {
        var out = [UInt8](repeating: 0xEE, count: 12)
        out.withUnsafeMutableBytes { Self.knownHeader.write(to: $0.baseAddress!) }
        #expect(Array(out[0..<10]) == Self.known)
        #expect(out[10] == 0xEE && out[11] == 0xEE)  // exactly 10 bytes written
    }

    @Test func roundTripsEveryFieldAtUnalignedOffsets() throws {
        let h = VirtioNetHeader(flags: 0xA5, gsoType: 0x85, headerLength: 0x1234, gsoSize: 0xFEDC,
                                checksumStart: 0x0102, checksumOffset: 0xF00F)
        var buf = [UInt8](repeating: 0, count: 13)
        buf.withUnsafeMutableBytes { h.write(to: $0.baseAddress! + 3) }
        #expect(Array(buf[3..<13]) == [0xA5, 0x85, 0x34, 0x12, 0xDC, 0xFE, 0x02, 0x01, 0x0F, 0xF0])
        let back = try decodeHeader(Array(buf[3...])).get()
        #expect(back == h)
        #expect(VirtioNetHeader() == VirtioNetHeader(flags: 0, gsoType: 0, headerLength: 0, gsoSize: 0, checksumStart: 0, checksumOffset: 0))
    }

    @Test func everyTruncationThrows() {
        for n in 0..<VirtioNetHeader.size {
            let prefix = Array(Self.known[0..<n])
            #expect(decodeHeader(prefix) == .failure(.truncatedHeader))
        }
        // Longer input: the header is the first 10 bytes.
        let longer = Self.known + [9, 9, 9]
        #expect(decodeHeader(longer) == .success(Self.knownHeader))
    }

    @Test func errorsDescribeThemselves() {
        let all: [OffloadError] = [.truncatedHeader, .unsupportedGSOType(3), .zeroSegmentSize, .headerMismatch("IPv4 fragment"),
                                   .checksumOutOfRange, .tooManySegments, .truncatedPacket]
        let texts = all.map(\.description)
        #expect(Set(texts).count == all.count)
        #expect(texts[1].contains("3") && texts[3].contains("IPv4 fragment"))
    }
}
