import Core
import CPcap
import Foundation
@testable import Capture

/// A fresh temporary directory per test, removed when the value is dropped.
final class TemporaryDirectory {
    let path: String

    init() {
        var bytes = Array((NSTemporaryDirectory() + "capture-test-XXXXXX").utf8CString)
        path = bytes.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { "\(path)/\(name)" }
}

/// A minimal IPv4 packet: 20-byte header, then a TCP (20 B) or UDP (8 B) header and `payload` bytes.
func ipv4Packet(protocol proto: UInt8, source: UInt32, destination: UInt32, sourcePort: UInt16,
                destinationPort: UInt16, payload: Int, fill: UInt8 = 0xAB) -> [UInt8] {
    let transport = proto == 6 ? 20 : 8
    let total = 20 + transport + payload
    var p = [UInt8](repeating: fill, count: total)
    p[0] = 0x45; p[1] = 0
    p[2] = UInt8(total >> 8); p[3] = UInt8(total & 0xFF)
    p[4] = 0; p[5] = 1; p[6] = 0x40; p[7] = 0
    p[8] = 64; p[9] = proto; p[10] = 0; p[11] = 0
    for i in 0..<4 {
        p[12 + i] = UInt8(truncatingIfNeeded: source >> (24 - 8 * i))
        p[16 + i] = UInt8(truncatingIfNeeded: destination >> (24 - 8 * i))
    }
    p[20] = UInt8(sourcePort >> 8); p[21] = UInt8(sourcePort & 0xFF)
    p[22] = UInt8(destinationPort >> 8); p[23] = UInt8(destinationPort & 0xFF)
    if proto == 6 {
        for i in 24..<40 { p[i] = 0 }
        p[32] = 0x50; p[33] = 0x18  // data offset 5, PSH|ACK
    } else {
        let length = 8 + payload
        p[24] = UInt8(length >> 8); p[25] = UInt8(length & 0xFF); p[26] = 0; p[27] = 0
    }
    return p
}

/// A minimal IPv6 UDP packet.
func ipv6UDPPacket(sourceLow: UInt64, destinationLow: UInt64, sourcePort: UInt16, destinationPort: UInt16, payload: Int) -> [UInt8] {
    var p = [UInt8](repeating: 0xCD, count: 48 + payload)
    p[0] = 0x60; p[1] = 0; p[2] = 0; p[3] = 0
    let length = 8 + payload
    p[4] = UInt8(length >> 8); p[5] = UInt8(length & 0xFF); p[6] = 17; p[7] = 64
    let high: UInt64 = 0xFD99_0000_0000_0000
    for i in 0..<8 {
        p[8 + i] = UInt8(truncatingIfNeeded: high >> (56 - 8 * i))
        p[16 + i] = UInt8(truncatingIfNeeded: sourceLow >> (56 - 8 * i))
        p[24 + i] = UInt8(truncatingIfNeeded: high >> (56 - 8 * i))
        p[32 + i] = UInt8(truncatingIfNeeded: destinationLow >> (56 - 8 * i))
    }
    p[40] = UInt8(sourcePort >> 8); p[41] = UInt8(sourcePort & 0xFF)
    p[42] = UInt8(destinationPort >> 8); p[43] = UInt8(destinationPort & 0xFF)
    p[44] = UInt8(length >> 8); p[45] = UInt8(length & 0xFF); p[46] = 0; p[47] = 0
    return p
}

/// One packet as a test wrote it.
struct Written {
    var bytes: [UInt8]
    var time: UInt64
    var location: CaptureLocation
}

/// A deterministic mix of flows: three IPv4 TCP flows (both directions), IPv4 UDP/53, IPv6 UDP.
func trafficMix(count: Int, payload: (Int) -> Int = { 100 + ($0 * 37) % 900 }) -> [[UInt8]] {
    (0..<count).map { i in
        let size = payload(i)
        switch i % 6 {
        case 0: return ipv4Packet(protocol: 6, source: 0x0A63_0002, destination: 0xC0A8_0105, sourcePort: 40000, destinationPort: 443, payload: size)
        case 1: return ipv4Packet(protocol: 6, source: 0xC0A8_0105, destination: 0x0A63_0002, sourcePort: 443, destinationPort: 40000, payload: size)
        case 2: return ipv4Packet(protocol: 6, source: 0x0A63_0003, destination: 0xC0A8_0105, sourcePort: 40001, destinationPort: 22, payload: size)
        case 3: return ipv4Packet(protocol: 17, source: 0x0A63_0002, destination: 0x0101_0101, sourcePort: 5353, destinationPort: 53, payload: size % 200)
        case 4: return ipv6UDPPacket(sourceLow: 2, destinationLow: 5, sourcePort: 6000, destinationPort: 443, payload: size)
        default: return ipv4Packet(protocol: 6, source: 0x0A63_0002, destination: 0xC0A8_0105, sourcePort: 40002, destinationPort: 443, payload: size)
        }
    }
}

/// All packets of a pcap file via plain libpcap: (caplen bytes, original length, ns timestamp).
func readAll(_ path: String) throws -> [(bytes: [UInt8], length: Int, time: UInt64)] {
    var errorBuffer = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE))
    guard let handle = pcap_open_offline_with_tstamp_precision(path, UInt32(PCAP_TSTAMP_PRECISION_NANO), &errorBuffer) else {
        throw CaptureError.cannotOpen(path: path, message: "test open failed")
    }
    defer { pcap_close(handle) }
    var out: [(bytes: [UInt8], length: Int, time: UInt64)] = []
    var header: UnsafeMutablePointer<pcap_pkthdr>?
    var data: UnsafePointer<UInt8>?
    while pcap_next_ex(handle, &header, &data) == 1, let h = header, let d = data {
        out.append((Array(UnsafeBufferPointer(start: d, count: Int(h.pointee.caplen))), Int(h.pointee.len),
                    UInt64(h.pointee.ts.tv_sec) * 1_000_000_000 + UInt64(h.pointee.ts.tv_usec)))
    }
    return out
}

/// Path of tcpdump when installed.
let tcpdumpPath = ["/usr/bin/tcpdump", "/usr/sbin/tcpdump"].first { FileManager.default.isExecutableFile(atPath: $0) }

/// Number of packets `tcpdump -r` prints for a file, and its exit status.
func tcpdumpCount(_ path: String) throws -> (count: Int, status: Int32) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tcpdumpPath!)
    process.arguments = ["-nn", "-r", path]
    let out = Pipe()
    process.standardOutput = out
    process.standardError = Pipe()
    try process.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let lines = String(decoding: data, as: UTF8.self).split(separator: "\n")
    return (lines.count, process.terminationStatus)
}
