// libFuzzer harness: arbitrary datagrams, and mutations of valid messages, into WireGuardDevice.receive.
// Build and run with fuzz/wireguard/run.sh.
import Core
import Packet
import WireGuard

/// Fixed keys and one valid message of each kind, built once.
struct Fixture: Sendable {
    let responder: WireGuardDevice
    let initiator: WireGuardDevice
    let templates: [[UInt8]]

    init() {
        let keyR = [UInt8](repeating: 1, count: 32), keyI = [UInt8](repeating: 2, count: 32)
        let responder = WireGuardDevice(privateKey: keyR)!
        let initiator = WireGuardDevice(privateKey: keyI)!
        self.responder = responder
        self.initiator = initiator
        let toR = initiator.addPeer(PeerConfiguration(publicKey: responder.publicKey,
                                                      endpoint: Endpoint(address: IPAddress(v4: 0x0A00_0002), port: 2)))
        _ = responder.addPeer(PeerConfiguration(publicKey: initiator.publicKey, presharedKey: [UInt8](repeating: 3, count: 32)))
        _ = initiator.updatePeer(toR, PeerConfiguration(publicKey: responder.publicKey,
                                                        presharedKey: [UInt8](repeating: 3, count: 32)))
        var ini = [UInt8](repeating: 0, count: 148)
        _ = ini.withUnsafeMutableBytes { initiator.initiation(for: toR, into: $0, now: 1, wallClock: 1_000_000_000) }
        var out = [UInt8](repeating: 0, count: 148)
        _ = ini.withUnsafeMutableBytes { i in
            out.withUnsafeMutableBytes {
                responder.receive(i, length: 148, from: Fixture.source, now: 1, underLoad: false, output: $0)
            }
        }
        // Regenerate the initiation (the responder consumed and recorded the first one).
        var ini2 = [UInt8](repeating: 0, count: 148)
        _ = ini2.withUnsafeMutableBytes {
            initiator.initiation(for: toR, into: $0, now: 10_000_000_000, wallClock: 2_000_000_000)
        }
        var data = [UInt8](repeating: 0, count: 96)
        data[16] = 0x45
        data[19] = 40
        templates = [ini2, Array(out[0..<92]), data]
    }

    static let source = Endpoint(address: IPAddress(v4: 0x0A00_0001), port: 1)
}

let fixture = Fixture()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    var datagram: [UInt8]
    let mode = input[0] % 4
    if mode == 3 {
        datagram = Array(input.dropFirst())
    } else {
        // XOR the rest of the input into a valid template, then cut it to a length the input picks.
        datagram = fixture.templates[Int(mode)]
        for (i, b) in input.dropFirst(2).enumerated() where i < datagram.count { datagram[i] ^= b }
        if size > 1 && input[1] & 0x80 != 0 { datagram = Array(datagram.prefix(Int(input[1] & 0x7f) * 2)) }
    }
    var buffer = datagram + [UInt8](repeating: 0, count: 32)
    var output = [UInt8](repeating: 0, count: 128)
    let underLoad = size > 2 && input[2] & 1 == 1
    let now = UInt64(size) * 1_000_000_000
    for device in [fixture.responder, fixture.initiator] {
        // The inbound thread's screen (what counts toward "under load"): any bytes, never a trap;
        // a message it counts has a handshake type of its exact length.
        datagram.withUnsafeBytes { d in
            let type = HandshakeScreen.messageType(d)
            if device.countsTowardLoad(d) { precondition(type != nil) }
        }
        let result = buffer.withUnsafeMutableBytes { b in
            output.withUnsafeMutableBytes {
                device.receive(b, length: datagram.count, from: Fixture.source, now: now, underLoad: underLoad, output: $0)
            }
        }
        // Ranges must stay inside the buffers they name.
        switch result {
        case .sendResponse(_, let r), .sendCookieReply(let r): precondition(r.upperBound <= output.count)
        case .data(_, let r, _): precondition(r.lowerBound >= 16 && r.upperBound <= datagram.count)
        default: break
        }
        _ = device.tick(now: now)
    }
    return 0
}
