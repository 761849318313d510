// tunnelbench hsflood: a handshake flood at a target rate, for scripts/bench/handshake-flood.sh.
//
//   tunnelbench hsflood --to HOST:PORT --kind junk|init [--key GATEWAY_PUBLIC_KEY] [--rate PPS]
//                       [--seconds S] [--no-gso]
//
// junk: 1-byte datagrams (0x01, 0x02, 0x03 in turn) — 1.26 kpps, the junk rate the bar is set at.
// init: 148-byte initiations with a valid mac1 for the gateway's public key (WireGuard's
//       MACs.mac1Key/writeMAC1, keyed BLAKE2s through libb2, as the gateway checks it) and random
//       sender index, ephemeral, encrypted static and timestamp. No static key is valid: the
//       gateway does one X25519 (or, under load, sends a cookie reply) and then drops the message
//       at the AEAD of the encrypted static ("handshake-decrypt-failed"), before any peer lookup.
// Everything is built before the clock starts (4,096 distinct messages in 64-slot batches) and
// sent with sendmmsg through LinuxDatagramBind (UDP GSO by default: equal-sized datagrams share one
// message; --no-gso sends one datagram per message), paced in batches against the monotonic
// clock; SIGTERM or SIGINT ends it early. The achieved rate (datagrams the kernel accepted per second) is printed, with the
// datagrams the socket would not take (would block).
import Core
import Foundation
import Packet
import Runtime
import SystemIO
import Synchronization
import WireGuard

/// Set by SIGTERM/SIGINT: the flood ends early and still prints its achieved rate.
private let hsfloodStop = Atomic<Bool>(false)

enum HandshakeFloodBench {
    static let name = "hsflood"
    static let summary = "send a handshake flood (1-byte junk or mac1-valid initiations) at a rate; prints the achieved rate"

    enum Kind: String { case junk, initiation = "init" }

    static func usage(_ message: String) -> Never {
        FileHandle.standardError.write(Data("""
            tunnelbench hsflood: \(message)
            usage: tunnelbench hsflood --to HOST:PORT --kind junk|init [--key BASE64] [--rate PPS] [--seconds S] [--no-gso]

            """.utf8))
        exit(2)
    }

    static func run(_ arguments: [String]) throws {
        var to: Endpoint?
        var kind: Kind?
        var key: WireGuard.PublicKey?
        var rate = 1_000.0
        var seconds = 5.0
        var gso = true
        var i = 0
        func value() -> String {
            i += 1
            guard i < arguments.count else { usage("\(arguments[i - 1]) needs a value") }
            return arguments[i]
        }
        while i < arguments.count {
            switch arguments[i] {
            case "--to":
                let v = value()
                guard let e = Endpoint(v) else { usage("--to \(v): not HOST:PORT with a numeric address") }
                to = e
            case "--kind":
                let v = value()
                guard let k = Kind(rawValue: v) else { usage("--kind \(v): expected junk or init") }
                kind = k
            case "--key":
                let v = value()
                guard let k = WireGuard.PublicKey(base64: v) else { usage("--key: not a base64 WireGuard public key") }
                key = k
            case "--rate":
                let v = value()
                guard let r = Double(v), r > 0 else { usage("--rate \(v): expected datagrams per second > 0") }
                rate = r
            case "--seconds":
                let v = value()
                guard let s = Double(v), s > 0 else { usage("--seconds \(v): expected a number > 0") }
                seconds = s
            case "--no-gso": gso = false
            default: usage("unknown argument '\(arguments[i])'")
            }
            i += 1
        }
        guard let to, let kind else { usage("--to and --kind are required") }
        if kind == .initiation && key == nil { usage("--kind init needs --key (the gateway's public key)") }

        // The messages, all built before the clock starts.
        let batchSize = 64, distinct = 4096
        let batches = (0..<(distinct / batchSize)).map { _ in PacketBatch(capacity: batchSize, slotSize: 256) }
        let random = SystemRandom()
        let mac1Key = key.map { MACs.mac1Key($0.bytes) } ?? []
        for (b, batch) in batches.enumerated() {
            for s in 0..<batchSize {
                let message: [UInt8]
                switch kind {
                case .junk:
                    message = [UInt8(1 + (b * batchSize + s) % 3)]
                case .initiation:
                    var m = random.bytes(MessageLayout.Initiation.size)
                    m[0] = UInt8(MessageType.initiation.rawValue); m[1] = 0; m[2] = 0; m[3] = 0
                    for k in MessageLayout.Initiation.mac2..<MessageLayout.Initiation.size { m[k] = 0 }
                    MACs.writeMAC1(&m, key: mac1Key)
                    message = m
                }
                batch.set(s, bytes: message, endpoint: to)
            }
            batch.count = batchSize
        }

        let bind = to.address.isIPv6
            ? try LinuxDatagramBind(port: 0, bufferBytes: 4 << 20, ipv4: nil, segmentation: gso)
            : try LinuxDatagramBind(port: 0, bufferBytes: 4 << 20, ipv6: nil, segmentation: gso)
        // Datagrams per sendmmsg: about one call every 0.5 ms (1 at 1.3 kpps, 50 at 100 kpps), so
        // low rates are not sent as bursts.
        let perSend = max(1, min(batchSize, Int(rate / 2_000)))
        let what = kind == .junk
            ? "1-byte junk"
            : "mac1-valid initiations for \(key!.base64) (random sender/ephemeral; no valid static key)"
        print("hsflood: \(what) to \(to) at \(Int(rate)) datagrams/s for \(seconds) s, sendmmsg x\(perSend)\(gso ? " with UDP GSO" : "")")

        signal(SIGTERM) { _ in hsfloodStop.store(true, ordering: .relaxed) }
        signal(SIGINT) { _ in hsfloodStop.store(true, ordering: .relaxed) }
        let clock = SystemClock()
        let start = clock.monotonicNanoseconds()
        let end = start + UInt64(seconds * 1e9)
        let nsPerDatagram = 1e9 / rate
        var offered = 0, accepted = 0, refused = 0, b = 0
        while true {
            let now = clock.monotonicNanoseconds()
            if now >= end || hsfloodStop.load(ordering: .relaxed) { break }
            // Pace: datagram k is due at start + k/rate (catching up at once when behind).
            let due = start + UInt64(Double(offered) * nsPerDatagram)
            if due > now {
                Sys.sleep(nanoseconds: due - now)
                continue
            }
            let batch = batches[b]
            b = (b + 1) % batches.count
            batch.count = perSend
            let sent = (try? bind.send(batch, from: 0)) ?? 0
            offered += perSend
            accepted += sent
            refused += perSend - sent
        }
        let elapsed = Double(clock.monotonicNanoseconds() - start) / 1e9
        print(String(format: "hsflood: achieved %.0f datagrams/s (%d sent in %.2f s; target %.0f/s; %d not taken by the socket)",
                     Double(accepted) / elapsed, accepted, elapsed, rate, refused))
        if bind.failedSends.load(ordering: .relaxed) > 0 {
            print("hsflood: \(bind.failedSends.load(ordering: .relaxed)) datagrams refused by the kernel (last errno \(bind.lastSendErrno.load(ordering: .relaxed)))")
        }
    }
}
