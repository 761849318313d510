// Interop check against a real wireguard-go in a network namespace (run.sh builds and runs it as root).
// Plays one WireGuard peer over a UDP socket on 127.0.0.1:51821 with WireGuardDevice; pings through the tunnel.
import Core
import Glibc
import Packet
import WireGuard

func now() -> UInt64 { var ts = timespec(); clock_gettime(CLOCK_MONOTONIC, &ts); return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec) }
func wall() -> UInt64 { var ts = timespec(); clock_gettime(CLOCK_REALTIME, &ts); return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec) }

func checksum(_ b: ArraySlice<UInt8>) -> UInt16 {
    var s: UInt32 = 0; var i = b.startIndex
    while i + 1 < b.endIndex { s += UInt32(b[i]) << 8 | UInt32(b[i + 1]); i += 2 }
    if i < b.endIndex { s += UInt32(b[i]) << 8 }
    while s >> 16 != 0 { s = (s & 0xffff) + (s >> 16) }
    return ~UInt16(s)
}

func echoRequest(seq: UInt16) -> [UInt8] {
    var p = [UInt8](repeating: 0, count: 20 + 8 + 32)
    p[0] = 0x45; p[2] = 0; p[3] = UInt8(p.count); p[8] = 64; p[9] = 1
    p.replaceSubrange(12..<16, with: [10, 99, 0, 2]); p.replaceSubrange(16..<20, with: [10, 99, 0, 1])
    let hc = checksum(p[0..<20]); p[10] = UInt8(hc >> 8); p[11] = UInt8(hc & 0xff)
    p[20] = 8; p[24] = 0x12; p[25] = 0x34; p[26] = UInt8(seq >> 8); p[27] = UInt8(seq & 0xff)
    for i in 28..<p.count { p[i] = UInt8(i) }
    let ic = checksum(p[20...]); p[22] = UInt8(ic >> 8); p[23] = UInt8(ic & 0xff)
    return p
}

let args = CommandLine.arguments
let priv = Base64.decode(args[1])!
let peerPub = PublicKey(base64: args[2])!
let mode = args[3]  // "initiate" or "respond"
let dev = WireGuardDevice(privateKey: priv)!
let wgEndpoint = Endpoint(address: IPAddress("127.0.0.1")!, port: 51820)
let peer = dev.addPeer(PeerConfiguration(publicKey: peerPub, endpoint: wgEndpoint))
let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
var addr = sockaddr_in(); addr.sin_family = sa_family_t(AF_INET); addr.sin_port = UInt16(51821).bigEndian; addr.sin_addr.s_addr = UInt32(0x7f000001).bigEndian
_ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
var tv = timeval(tv_sec: 0, tv_usec: 200_000)
setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
func send(_ bytes: UnsafeRawBufferPointer) {
    var to = sockaddr_in(); to.sin_family = sa_family_t(AF_INET); to.sin_port = UInt16(51820).bigEndian; to.sin_addr.s_addr = UInt32(0x7f000001).bigEndian
    _ = withUnsafePointer(to: &to) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
}
func sendPacket(_ p: [UInt8]) -> Bool {
    var buf = [UInt8](repeating: 0, count: 2048)
    buf.replaceSubrange(16..<(16 + p.count), with: p)
    return buf.withUnsafeMutableBytes { b in
        if case .send(let r, _) = dev.encrypt(peer: peer, buffer: b, payloadLength: p.count, now: now()) { send(UnsafeRawBufferPointer(rebasing: b[r])); return true }
        return false
    }
}
var inbuf = [UInt8](repeating: 0, count: 2048), out = [UInt8](repeating: 0, count: 256)
if mode == "initiate" {
    out.withUnsafeMutableBytes { o in if case .send(let r, _) = dev.initiation(for: peer, into: o, now: now(), wallClock: wall()) { send(UnsafeRawBufferPointer(rebasing: o[r])) } }
}
var seq: UInt16 = 1, replies = 0
let deadline = now() + 8_000_000_000
while now() < deadline && replies < 3 {
    let n = inbuf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
    if n <= 0 { continue }
    let result = inbuf.withUnsafeMutableBytes { i in out.withUnsafeMutableBytes { o in dev.receive(i, length: n, from: wgEndpoint, now: now(), underLoad: false, output: o) } }
    print("recv \(n) bytes -> \(result)")
    switch result {
    case .sendResponse(_, let r), .sendCookieReply(let r): out.withUnsafeBytes { send(UnsafeRawBufferPointer(rebasing: $0[r])) }
    case .handshakeComplete: print("sent echo: \(sendPacket(echoRequest(seq: seq)))"); seq += 1
    case .data(_, let r, _):
        let p = Array(inbuf[r])
        if p[9] == 1 && p[20] == 0 { replies += 1; print("ICMP echo REPLY from wireguard-go, seq \(p[27])"); if replies < 3 { print("sent echo: \(sendPacket(echoRequest(seq: seq)))"); seq += 1 } }
        else if p[9] == 1 && p[20] == 8 {
            // echo request from 10.99.0.1: answer it
            var rep = p; rep.replaceSubrange(12..<16, with: p[16..<20]); rep.replaceSubrange(16..<20, with: p[12..<16]); rep[20] = 0
            rep[10] = 0; rep[11] = 0; let hc = checksum(rep[0..<20]); rep[10] = UInt8(hc >> 8); rep[11] = UInt8(hc & 0xff)
            rep[22] = 0; rep[23] = 0; let ic = checksum(rep[20...]); rep[22] = UInt8(ic >> 8); rep[23] = UInt8(ic & 0xff)
            replies += 1; print("ICMP echo REQUEST from wireguard-go answered: \(sendPacket(rep))")
        }
    default: break
    }
}
print(replies >= 3 ? "INTEROP OK (\(mode))" : "INTEROP FAILED (\(mode))")
exit(replies >= 3 ? 0 : 1)
