// Helpers shared by the WireGuard tests: deterministic randomness, hex, two devices on a wire.
import Core
import Packet
import Synchronization
import WireGuard

/// A deterministic random source: scripted bytes first, then a splitmix64 stream.
final class TestRandom: RandomSource {
    private let state: Mutex<(script: [UInt8], seed: UInt64)>

    init(seed: UInt64 = 1, script: [UInt8] = []) { state = Mutex((script, seed)) }

    /// Queues bytes to be returned before the pseudo-random stream.
    func script(_ bytes: [UInt8]) { state.withLock { $0.script += bytes } }

    func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        state.withLock { s in
            for i in 0..<buffer.count {
                if !s.script.isEmpty {
                    buffer[i] = s.script.removeFirst()
                } else {
                    s.seed &+= 0x9E37_79B9_7F4A_7C15
                    var z = s.seed
                    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                    buffer[i] = UInt8(truncatingIfNeeded: z ^ (z >> 31))
                }
            }
        }
    }
}

func hex(_ s: String) -> [UInt8] {
    var out: [UInt8] = []
    var it = s.utf8.makeIterator()
    func nibble(_ c: UInt8) -> UInt8 {
        switch c {
        case 48...57: c - 48
        case 97...102: c - 87
        case 65...70: c - 55
        default: fatalError("bad hex")
        }
    }
    while let a = it.next(), let b = it.next() { out.append(nibble(a) << 4 | nibble(b)) }
    return out
}

func hexString(_ b: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    for x in b {
        out.append(digits[Int(x >> 4)])
        out.append(digits[Int(x & 15)])
    }
    return String(decoding: out, as: UTF8.self)
}

let second = WireGuardProtocol.second
let endpointA = Endpoint(address: IPAddress("192.0.2.1")!, port: 51820)
let endpointB = Endpoint(address: IPAddress("198.51.100.7")!, port: 40000)

/// An IPv4 packet of `length` bytes (≥ 20) with a valid total-length field and patterned payload.
func ipv4Packet(_ length: Int, fill: UInt8 = 0xab) -> [UInt8] {
    var p = [UInt8](repeating: fill, count: length)
    p[0] = 0x45
    p[1] = 0
    p[2] = UInt8(length >> 8)
    p[3] = UInt8(length & 0xff)
    return p
}

/// Two devices configured as each other's peer, and helpers to move datagrams between them.
struct Pair {
    let a: WireGuardDevice
    let b: WireGuardDevice
    /// B as seen from A, and A as seen from B.
    let peerB: PeerHandle
    let peerA: PeerHandle
    let randomA: TestRandom
    let randomB: TestRandom

    init(psk: [UInt8]? = nil, keepaliveA: UInt16 = 0, seed: UInt64 = 7) {
        randomA = TestRandom(seed: seed)
        randomB = TestRandom(seed: seed &* 31 &+ 1)
        let keyA = randomA.bytes(32)
        let keyB = randomB.bytes(32)
        a = WireGuardDevice(privateKey: keyA, random: randomA)!
        b = WireGuardDevice(privateKey: keyB, random: randomB)!
        peerB = a.addPeer(PeerConfiguration(publicKey: b.publicKey, presharedKey: psk,
                                            persistentKeepaliveSeconds: keepaliveA, endpoint: endpointB))
        peerA = b.addPeer(PeerConfiguration(publicKey: a.publicKey, presharedKey: psk))
    }

    func device(_ isA: Bool) -> WireGuardDevice { isA ? a : b }
    func handle(from isA: Bool) -> PeerHandle { isA ? peerB : peerA }
    func source(of isA: Bool) -> Endpoint { isA ? endpointA : endpointB }
}

/// Feeds `datagram` to `device` from `source`; returns the result, the (maybe decrypted) input
/// buffer and the output buffer.
func deliver(_ datagram: [UInt8], to device: WireGuardDevice, from source: Endpoint, now: UInt64,
             underLoad: Bool = false, admit: (PeerHandle, Bool) -> Bool = { _, refused in !refused }) -> (ReceiveResult, [UInt8], [UInt8])
{
    var input = datagram + [UInt8](repeating: 0, count: 16)
    var output = [UInt8](repeating: 0, count: 256)
    let r = input.withUnsafeMutableBytes { inp in
        output.withUnsafeMutableBytes { out -> ReceiveResult in
            // The gateway's two steps: the device authenticates, the caller decides, the device answers.
            let r = device.receive(inp, length: datagram.count, from: source, now: now, underLoad: underLoad, output: out,
                                   deferInitiations: true)
            guard case .initiation(let token) = r else { return r }
            guard admit(token.peerHandle, token.refused) else { return .refused(peer: token.peerHandle) }
            return device.respond(to: token, now: now, output: out)
        }
    }
    return (r, input, output)
}

/// Builds an initiation from the device on side `isA`.
func initiation(_ pair: Pair, fromA isA: Bool, now: UInt64, wall: UInt64, retry: Bool = false) -> [UInt8]? {
    var buf = [UInt8](repeating: 0, count: 148)
    let r = buf.withUnsafeMutableBytes {
        pair.device(isA).initiation(for: pair.handle(from: isA), retry: retry, into: $0, now: now, wallClock: wall)
    }
    switch r {
    case .send(let range, _), .noEndpoint(let range): return Array(buf[range])
    default: return nil
    }
}

/// Runs a whole handshake with `initiatorIsA`; returns the response bytes.
@discardableResult
func handshake(_ pair: Pair, initiatorIsA: Bool, now: UInt64, wall: UInt64) -> [UInt8] {
    let ini = initiation(pair, fromA: initiatorIsA, now: now, wall: wall)!
    let (r1, _, out1) = deliver(ini, to: pair.device(!initiatorIsA), from: pair.source(of: initiatorIsA), now: now)
    guard case .sendResponse(_, let range) = r1 else { fatalError("no response: \(r1)") }
    let response = Array(out1[range])
    let (r2, _, _) = deliver(response, to: pair.device(initiatorIsA), from: pair.source(of: !initiatorIsA), now: now)
    guard case .handshakeComplete = r2 else { fatalError("not complete: \(r2)") }
    return response
}

/// Encrypts `payload` from side `isA`; returns the result and the message bytes on success.
func seal(_ pair: Pair, fromA isA: Bool, _ payload: [UInt8], now: UInt64) -> (SendResult, [UInt8]) {
    let device = pair.device(isA)
    var buf = [UInt8](repeating: 0, count: 16 + device.sealedLength(payload.count))
    buf.replaceSubrange(16..<(16 + payload.count), with: payload)
    let r = buf.withUnsafeMutableBytes {
        device.encrypt(peer: pair.handle(from: isA), buffer: $0, payloadLength: payload.count, now: now)
    }
    switch r {
    case .send(let range, _), .noEndpoint(let range): return (r, Array(buf[range]))
    default: return (r, [])
    }
}

/// Sends `payload` from side `isA` to the other side; returns the receive result and the delivered plaintext.
func transfer(_ pair: Pair, fromA isA: Bool, _ payload: [UInt8], now: UInt64) -> (ReceiveResult, [UInt8]) {
    let (sr, msg) = seal(pair, fromA: isA, payload, now: now)
    guard case .send = sr else { return (.drop(.badLength), []) }
    let (r, input, _) = deliver(msg, to: pair.device(!isA), from: pair.source(of: isA), now: now)
    if case .data(_, let range, _) = r { return (r, Array(input[range])) }
    return (r, [])
}
