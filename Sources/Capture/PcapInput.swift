import Core
import CPcap
import Runtime
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One packet read from a capture file; valid until the next `PcapInput.next()`.
struct PcapPacket {
    /// libpcap's record header (for `pcap_offline_filter` and re-dumping).
    let header: UnsafePointer<pcap_pkthdr>
    /// The captured bytes (`caplen` of them).
    let bytes: UnsafeRawBufferPointer
    /// Original length on the wire.
    var length: Int { Int(header.pointee.len) }
    /// Timestamp, nanoseconds since the epoch (files are opened with nanosecond precision).
    /// libpcap reads the record's fields as signed 32-bit numbers, so a damaged record can give
    /// negative ones: those read as 0 (found by fuzz/pcap; this used to trap).
    var timestampNanoseconds: UInt64 {
        let seconds = header.pointee.ts.tv_sec, fraction = header.pointee.ts.tv_usec
        guard seconds >= 0, fraction >= 0 else { return 0 }
        return UInt64(seconds) &* 1_000_000_000 &+ UInt64(fraction)
    }
}

/// A capture file opened for reading with `pcap_open_offline` (nanosecond timestamps).
final class PcapInput {
    let path: String
    let handle: OpaquePointer

    init(path: String) throws(CaptureError) {
        self.path = path
        var errorBuffer = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE))
        guard let handle = pcap_open_offline_with_tstamp_precision(path, UInt32(PCAP_TSTAMP_PRECISION_NANO), &errorBuffer) else {
            throw .cannotOpen(path: path, message: pcapErrorString(errorBuffer))
        }
        self.handle = handle
    }

    deinit { pcap_close(handle) }

    /// The file's link type (DLT_RAW for ours).
    var linkType: Int32 { pcap_datalink(handle) }
    /// The file's snapshot length.
    var snaplen: Int32 { pcap_snapshot(handle) }

    /// Moves to the record at byte `offset` (a `CaptureLocation.offset`).
    func seek(to offset: UInt64) throws(CaptureError) {
        guard let file = pcap_file(handle), fseeko(file, off_t(offset), SEEK_SET) == 0 else {
            throw .system(SystemError("fseeko(\(path))", errno: errno))
        }
    }

    /// The next packet, nil at the end of the file or at a truncated last record.
    func next() -> PcapPacket? {
        var header: UnsafeMutablePointer<pcap_pkthdr>?
        var data: UnsafePointer<UInt8>?
        guard pcap_next_ex(handle, &header, &data) == 1, let header, let data else { return nil }
        return PcapPacket(header: UnsafePointer(header),
                          bytes: UnsafeRawBufferPointer(start: data, count: Int(header.pointee.caplen)))
    }
}

/// The NUL-terminated message libpcap left in an error buffer.
func pcapErrorString(_ buffer: [CChar]) -> String {
    buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
}
