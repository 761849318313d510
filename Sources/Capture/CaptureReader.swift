import Core
import CPcap
import Runtime
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads capture files and writes selections of them to new pcap files
/// (`tunnelctl capture extract --flow ID -o FILE [--filter BPF]`).
public enum CaptureReader {
    /// What an extraction wrote.
    public struct Result: Sendable, Equatable {
        /// Packets written to the output.
        public var packets: Int
        /// Capture files read.
        public var filesRead: Int
    }

    /// Copies the packets of `files` chosen by `selection` and the BPF expression `bpfFilter`
    /// (pcap-filter(7) syntax, compiled for raw IP) into a new pcap file at `outputPath`.
    /// Files are taken in sequence order; unreadable or non-raw-IP files throw.
    public static func extract(files: [CaptureFileInfo], selection: CaptureSelection, bpfFilter: String? = nil,
                               outputPath: String) throws(CaptureError) -> Result {
        let ordered = files.sorted { $0.sequence < $1.sequence }
        var snaplen = CaptureDetail.metadata.snaplen
        for file in ordered {
            let input = try PcapInput(path: file.path)
            guard input.linkType == DLT_RAW else { throw .unexpectedLinkType(path: file.path, linkType: input.linkType) }
            snaplen = max(snaplen, input.snaplen)
        }
        let output = try PcapOutput(path: outputPath, snaplen: snaplen)
        var program = bpf_program()
        var hasFilter = false
        if let bpfFilter, !bpfFilter.isEmpty {
            guard pcap_compile(output.pcap, &program, bpfFilter, 1, PCAP_NETMASK_UNKNOWN) == 0 else {
                throw .badFilter(expression: bpfFilter, message: String(cString: pcap_geterr(output.pcap)))
            }
            hasFilter = true
        }
        defer { if hasFilter { pcap_freecode(&program) } }
        func passes(_ packet: PcapPacket) -> Bool {
            guard hasFilter else { return true }
            return withUnsafePointer(to: program) { prog in
                pcap_offline_filter(prog, packet.header, packet.bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)) != 0
            }
        }
        var result = Result(packets: 0, filesRead: 0)
        switch selection {
        case .all:
            for file in ordered {
                let input = try PcapInput(path: file.path)
                result.filesRead += 1
                while let packet = input.next() {
                    guard passes(packet) else { continue }
                    output.write(packet)
                    result.packets += 1
                }
            }
        case .flow(let key, let from, let until):
            scan: for file in ordered {
                if let from, file.sequence < from.fileSequence { continue }
                let input = try PcapInput(path: file.path)
                if let from, file.sequence == from.fileSequence { try input.seek(to: from.offset) }
                result.filesRead += 1
                while let packet = input.next() {
                    if let until, packet.timestampNanoseconds > until { break scan }
                    guard let summary = CapturePacketSummary(packet: packet.bytes), key.matches(summary), passes(packet) else { continue }
                    output.write(packet)
                    result.packets += 1
                }
            }
        case .locations(let locations):
            let bySequence = Dictionary(grouping: locations.sorted(), by: \.fileSequence)
            for file in ordered {
                guard let wanted = bySequence[file.sequence] else { continue }
                let input = try PcapInput(path: file.path)
                result.filesRead += 1
                for location in wanted {
                    try input.seek(to: location.offset)
                    guard let packet = input.next(), passes(packet) else { continue }
                    output.write(packet)
                    result.packets += 1
                }
            }
        }
        try output.close()
        return result
    }

    /// Calls `body` with the summary, timestamp, original length and location of every packet of
    /// a capture file, in order (tools and tests; `tunnelctl capture list --scan`).
    public static func forEachPacket(in file: CaptureFileInfo,
                                     _ body: (CaptureLocation, UInt64, Int, UnsafeRawBufferPointer) -> Void) throws(CaptureError) {
        let input = try PcapInput(path: file.path)
        var offset = CaptureWriter.fileHeaderSize
        while let packet = input.next() {
            body(CaptureLocation(fileSequence: file.sequence, offset: offset), packet.timestampNanoseconds, packet.length, packet.bytes)
            offset += CaptureWriter.recordHeaderSize + UInt64(packet.bytes.count)
        }
    }
}

/// A pcap file being written by the reader (raw IP, nanosecond timestamps).
final class PcapOutput {
    let path: String
    let pcap: OpaquePointer
    private var dumper: OpaquePointer?

    init(path: String, snaplen: Int32) throws(CaptureError) {
        self.path = path
        guard let pcap = pcap_open_dead_with_tstamp_precision(DLT_RAW, snaplen, UInt32(PCAP_TSTAMP_PRECISION_NANO)) else {
            throw .cannotOpen(path: path, message: "pcap_open_dead failed")
        }
        guard let dumper = pcap_dump_open(pcap, path) else {
            let message = String(cString: pcap_geterr(pcap))
            pcap_close(pcap)
            throw .cannotOpen(path: path, message: message)
        }
        self.pcap = pcap
        self.dumper = dumper
    }

    func write(_ packet: PcapPacket) {
        guard let dumper else { return }
        pcap_dump(UnsafeMutablePointer<UInt8>(dumper), packet.header, packet.bytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
    }

    func close() throws(CaptureError) {
        guard let dumper else { return }
        self.dumper = nil
        let failed = pcap_dump_flush(dumper) != 0
        pcap_dump_close(dumper)
        if failed { throw .writeFailed(path: path, message: errnoText(errno)) }
    }

    deinit {
        if let dumper { pcap_dump_close(dumper) }
        pcap_close(pcap)
    }
}
