import Core
import Testing
@testable import Packet

@Suite struct InternetChecksumTests {
    /// RFC 1071 §3 example: the words 0001 f203 f4f5 f6f7 sum to ddf2.
    @Test func rfc1071Example() {
        let bytes: [UInt8] = [0x00, 0x01, 0xF2, 0x03, 0xF4, 0xF5, 0xF6, 0xF7]
        bytes.withUnsafeBytes { b in
            var c = InternetChecksum()
            c.add(b)
            #expect(c.folded == 0xDDF2)
            #expect(c.finalized == 0x220D)
        }
    }

    /// The IPv4 header example with checksum b861 (192.168.0.1 -> 192.168.0.199, UDP).
    @Test func ipv4HeaderKnownAnswer() {
        var h: [UInt8] = [0x45, 0, 0, 0x73, 0, 0, 0x40, 0, 0x40, 0x11, 0, 0, 0xC0, 0xA8, 0, 1, 0xC0, 0xA8, 0, 0xC7]
        h.withUnsafeBytes { #expect(InternetChecksum.checksum($0) == 0xB861) }
        h[10] = 0xB8; h[11] = 0x61
        h.withUnsafeBytes { #expect(InternetChecksum.checksum($0) == 0) }
    }

    /// Odd lengths, odd split points at even offsets, and agreement with the slow reference.
    @Test func randomAgainstSlowSum() {
        var rng = SplitMix(seed: 1071)
        for _ in 0..<500 {
            let n = Int(rng.next() % 200)
            let bytes = (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let split = n == 0 ? 0 : Int(rng.next() % UInt64(n)) & ~1
            bytes.withUnsafeBytes { b in
                var c = InternetChecksum()
                c.add(UnsafeRawBufferPointer(rebasing: b[0..<split]))
                c.add(UnsafeRawBufferPointer(rebasing: b[split...]))
                #expect(c.folded == TestPackets.slowSum(bytes) || (c.folded == 0xFFFF && TestPackets.slowSum(bytes) == 0)
                        || (c.folded == 0 && TestPackets.slowSum(bytes) == 0xFFFF))
            }
        }
    }

    /// RFC 1624: updating one word incrementally gives the checksum recomputed from scratch.
    @Test func incrementalUpdate() {
        var rng = SplitMix(seed: 1624)
        for _ in 0..<500 {
            var words = (0..<10).map { _ in UInt16(truncatingIfNeeded: rng.next()) }
            func sum() -> UInt16 {
                var c = InternetChecksum()
                for w in words { c.add(w) }
                return c.finalized
            }
            let before = sum()
            let i = Int(rng.next() % 10)
            let old = words[i]
            words[i] = UInt16(truncatingIfNeeded: rng.next())
            let after = sum()
            let updated = InternetChecksum.updated(before, replacing: old, with: words[i])
            // Ones' complement has two zeros (0x0000, 0xFFFF); RFC 1624 §3 shows eqn. 3 never
            // yields 0xFFFF... both represent the same sum.
            #expect(updated == after || (updated ^ after) == 0xFFFF && (updated == 0 || after == 0))
        }
    }

    /// TCP/UDP/ICMPv6 checksums of the corpus (made by the independent test builder) verify.
    @Test func pseudoHeaderChecksumsVerify() throws {
        for (name, bytes) in TestPackets.corpus {
            let p = try parsed(bytes)
            guard p.hasTransportHeader, !p.fragment.isFragment, p.proto != .icmp else { continue }
            guard [IPProtocol.tcp, .udp, .icmpv6].contains(p.proto) else { continue }
            bytes.withUnsafeBytes { b in
                var c = InternetChecksum()
                c.addPseudoHeader(source: p.source, destination: p.destination, proto: p.proto,
                                  length: p.totalLength - p.transportOffset)
                c.add(UnsafeRawBufferPointer(rebasing: b[p.transportOffset..<p.totalLength]))
                #expect(c.folded == 0xFFFF, "\(name)")
            }
        }
    }
}
