// tunnelbench wgload / sink / blast: a WireGuard load generator that costs less than the gateway
// it measures, so "capacity per gateway core" is what a benchmark sees.
//
//   tunnelbench wgload --gateway HOST:PORT --gateway-key BASE64 --peers FILE --to IP:PORT
//                      [--size BYTES] [--packets N] [--rate PPS] [--seconds S] [--burst B] [--no-gso]
//       Completes a real handshake as the initiator for every peer of FILE (lines
//       "PRIVATE-KEY-BASE64 TUNNEL-IPv4"), pre-encrypts N transport messages round-robin over the
//       peers (consecutive counters; inner IPv4/UDP from the peer's tunnel address to --to, BYTES
//       of payload, as a Linux sender writes them: UDP checksum set, IPv4 ID counting per flow;
//       --burst B: B consecutive messages per peer before the next, default 1), then sends them with sendmmsg (UDP GSO unless --no-gso) paced at PPS
//       (0 = flat out) until they run out or S seconds pass. Prints what the socket took.
//   tunnelbench wgload ... --receive --seconds S
//       The other direction: handshakes as above (plus a keepalive so the gateway has the
//       endpoint), then counts the transport messages the gateway sends until 700 ms pass
//       without one (or S seconds), decrypting
//       one in 64 through the peers' devices to prove they are real.
//   tunnelbench sink --listen IP:PORT [--seconds S] [--idle MS]
//       Counts datagrams and payload bytes with recvmmsg until S seconds pass or nothing arrived
//       for MS milliseconds after the first one. Prints `sink: N datagrams B bytes`.
//   tunnelbench blast --to IP[,IP...] --port PORT [--size BYTES] [--packets N] [--rate PPS] [--burst B]
//       Plain UDP to each address in turn (a server sending to the peers' tunnel addresses), B
//       consecutive datagrams to one address before the next (default 1: strict round robin).
//       Runs of one address go out as one UDP GSO send, as a router's NIC hands the kernel GRO
//       trains of each flow; strict round robin makes every datagram its own skb.
import Core
import Foundation
import Packet
import Runtime
import SystemIO
import Synchronization
import WireGuard

enum WGLoadBench {
    static let name = "wgload"
    static let summary = "WireGuard load generator: real handshakes, pre-encrypted transport from K peers, GSO sends (or --receive)"

    static func usage(_ message: String) -> Never {
        FileHandle.standardError.write(Data("""
            tunnelbench wgload: \(message)
            usage: tunnelbench wgload --gateway HOST:PORT --gateway-key BASE64 --peers FILE --to IP:PORT
                   [--size BYTES] [--packets N] [--rate PPS] [--seconds S] [--no-gso] [--receive]

            """.utf8))
        exit(2)
    }

    struct LoadPeer {
        let device: WireGuardDevice
        let handle: PeerHandle
        let tunnel: IPAddress
    }

    static func run(_ arguments: [String]) throws {
        var gateway: Endpoint?, gatewayKey: WireGuardKey?, peersFile: String?, to: Endpoint?
        var size = 64, packets = 200_000, rate = 0.0, seconds = 5.0, gso = true, receiveMode = false, burst = 1
        var i = 0
        func value() -> String {
            i += 1
            guard i < arguments.count else { usage("\(arguments[i - 1]) needs a value") }
            return arguments[i]
        }
        while i < arguments.count {
            switch arguments[i] {
            case "--gateway": gateway = Endpoint(value())
            case "--gateway-key": gatewayKey = WireGuardKey(base64: value())
            case "--peers": peersFile = value()
            case "--to": to = Endpoint(value())
            case "--size": size = Int(value()) ?? -1
            case "--packets": packets = Int(value()) ?? -1
            case "--rate": rate = Double(value()) ?? -1
            case "--seconds": seconds = Double(value()) ?? -1
            case "--burst": burst = Int(value()) ?? -1
            case "--no-gso": gso = false
            case "--receive": receiveMode = true
            default: usage("unknown argument '\(arguments[i])'")
            }
            i += 1
        }
        guard let gateway, let gatewayKey, let peersFile else { usage("--gateway, --gateway-key and --peers are required") }
        guard size >= 0 && size <= 1400, packets > 0, rate >= 0, seconds > 0, burst >= 1 else { usage("bad --size, --packets, --rate, --seconds or --burst") }
        guard receiveMode || to != nil else { usage("--to is required (or --receive)") }
        let lines = try String(contentsOfFile: peersFile, encoding: .utf8).split(separator: "\n")
        let clock = SystemClock()
        let bind = gateway.address.isIPv6
            ? try LinuxDatagramBind(port: 0, bufferBytes: 16 << 20, ipv4: nil, segmentation: gso)
            : try LinuxDatagramBind(port: 0, bufferBytes: 16 << 20, ipv6: nil, segmentation: gso)

        // 1. Handshakes, all initiations first, then the responses as they come.
        var peers: [LoadPeer] = []
        for line in lines {
            let f = line.split(separator: " ")
            guard f.count >= 2, let key = WireGuardKey(base64: f[0]), let tunnel = IPAddress(String(f[1])), !tunnel.isIPv6,
                  let device = WireGuardDevice(privateKey: key.bytes)
            else { usage("\(peersFile): lines must be 'PRIVATE-KEY-BASE64 TUNNEL-IPv4'") }
            let handle = device.addPeer(PeerConfiguration(publicKey: WireGuard.PublicKey(gatewayKey.bytes)!, endpoint: gateway))
            peers.append(LoadPeer(device: device, handle: handle, tunnel: tunnel))
        }
        guard !peers.isEmpty else { usage("\(peersFile) has no peers") }
        try handshake(peers, bind: bind, gateway: gateway, clock: clock)
        print("wgload: \(peers.count) handshake(s) complete with \(gateway)")

        if receiveMode {
            try receive(peers, bind: bind, seconds: seconds, clock: clock)
            return
        }
        guard let to, !to.address.isIPv6 else { usage("--to must be an IPv4 address and port") }

        // 2. Pre-encrypt: packet n belongs to peer (n / B) % K; consecutive counters per peer.
        let batchSize = 64
        let now = clock.boottimeNanoseconds()
        let count = (packets + batchSize - 1) / batchSize * batchSize
        let sealed = peers[0].device.sealedLength(28 + size)
        let batches = (0..<(count / batchSize)).map { _ in PacketBatch(capacity: batchSize, slotSize: sealed + 64) }
        let t0 = clock.monotonicNanoseconds()
        var inner = [UInt8](repeating: 0, count: 28 + size)
        var ident = [UInt16](repeating: 0, count: peers.count)  // each peer's flow counts its own IPv4 IDs
        for n in 0..<count {
            let k = (n / burst) % peers.count
            let p = peers[k]
            let batch = batches[n / batchSize], s = n % batchSize
            writeUDP4(&inner, from: p.tunnel, sourcePort: UInt16(40_000 + k % 20_000), to: to, payload: size,
                      sequence: UInt32(n), ident: ident[k])
            ident[k] &+= 1
            let slot = batch.slot(s)
            inner.withUnsafeBytes { (slot.baseAddress! + 16).copyMemory(from: $0.baseAddress!, byteCount: inner.count) }
            guard case .send(let range, _) = p.device.encrypt(peer: p.handle, buffer: slot, payloadLength: inner.count, now: now) else {
                throw BenchFailure("encrypt failed for peer \(k)")
            }
            batch.offsets[s] = 0
            batch.lengths[s] = range.count
            batch.endpoints[s] = gateway
        }
        for b in batches { b.count = batchSize }
        print(String(format: "wgload: %d transport messages of %d B (inner UDP payload %d B) pre-encrypted in %.2f s",
                     count, sealed, size, Double(clock.monotonicNanoseconds() - t0) / 1e9))

        // 3. Send, paced per batch against the monotonic clock (rate 0: flat out).
        let start = clock.monotonicNanoseconds()
        let end = start + UInt64(seconds * 1e9)
        var offered = 0, accepted = 0, b = 0
        while b < batches.count {
            let t = clock.monotonicNanoseconds()
            if t >= end { break }
            if rate > 0 {
                let due = start + UInt64(Double(offered) / rate * 1e9)
                if due > t {
                    Sys.sleep(nanoseconds: min(due - t, 1_000_000))
                    continue
                }
            }
            let batch = batches[b]
            var from = 0
            while from < batch.count {
                let sent = (try? bind.send(batch, from: from)) ?? 0
                if sent == 0 { Sys.sleep(nanoseconds: 20_000) }  // socket full: wait, do not drop
                from += sent
                if clock.monotonicNanoseconds() >= end { break }
            }
            offered += batch.count
            accepted += from
            b += 1
        }
        let elapsed = Double(clock.monotonicNanoseconds() - start) / 1e9
        print(String(format: "wgload: sent %d datagrams in %.3f s = %.0f pps (%.3f Gbit/s inner payload), target %@",
                     accepted, elapsed, Double(accepted) / elapsed, Double(accepted * size * 8) / elapsed / 1e9,
                     rate > 0 ? String(format: "%.0f pps", rate) : "flat out"))
        if bind.failedSends.load(ordering: .relaxed) > 0 {
            print("wgload: \(bind.failedSends.load(ordering: .relaxed)) datagrams refused by the kernel (errno \(bind.lastSendErrno.load(ordering: .relaxed)))")
        }
    }

    /// Sends every peer's initiation and waits (5 s at most) for every response, then a keepalive
    /// each so the gateway confirms the sessions.
    static func handshake(_ peers: [LoadPeer], bind: LinuxDatagramBind, gateway: Endpoint, clock: SystemClock) throws {
        let out = PacketBatch(capacity: 64, slotSize: 256)
        let rx = PacketBatch(capacity: 64, slotSize: 2048)
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 256, alignment: 16)
        defer { scratch.deallocate() }
        var pending = Set(peers.indices)
        let deadline = clock.monotonicNanoseconds() + 5_000_000_000
        var attempt = 0
        while !pending.isEmpty {
            attempt += 1
            // (Re)send initiations for the peers still waiting, 64 per sendmmsg.
            let waiting = Array(pending).sorted()
            var k = 0
            while k < waiting.count {
                out.count = 0
                for idx in waiting[k..<min(k + 64, waiting.count)] {
                    let slot = out.slot(out.count)
                    let now = clock.boottimeNanoseconds()
                    guard case .send(let range, _) = peers[idx].device.initiation(for: peers[idx].handle, retry: attempt > 1, into: slot,
                                                                                   now: now, wallClock: UInt64(clock.wallNanoseconds()))
                    else { continue }
                    out.offsets[out.count] = 0
                    out.lengths[out.count] = range.count
                    out.endpoints[out.count] = gateway
                    out.count += 1
                }
                _ = try bind.send(out, from: 0)
                k += 64
            }
            let retryAt = clock.monotonicNanoseconds() + 1_000_000_000
            while !pending.isEmpty && clock.monotonicNanoseconds() < retryAt {
                guard try bind.waitReadable(timeoutMilliseconds: 50) == .readable else { continue }
                let n = try bind.receive(into: rx)
                for j in 0..<n {
                    let msg = rx.packet(j)
                    guard msg.count >= 12 else { continue }
                    // The response names our sender index; try the peers still pending (cheap:
                    // a device drops a response that is not its own at the index lookup).
                    for idx in pending {
                        if case .handshakeComplete = peers[idx].device.receive(msg, length: msg.count, from: gateway,
                                                                               now: clock.boottimeNanoseconds(), underLoad: false, output: scratch) {
                            pending.remove(idx)
                            break
                        }
                    }
                }
            }
            if clock.monotonicNanoseconds() > deadline {
                throw BenchFailure("\(pending.count) of \(peers.count) handshakes did not complete within 5 s (is the gateway up, are the keys in its config?)")
            }
        }
        // A keepalive each, so the gateway confirms the sessions and knows our endpoint.
        out.count = 0
        for p in peers {
            if out.count == out.capacity {
                _ = try bind.send(out, from: 0)
                out.count = 0
            }
            let slot = out.slot(out.count)
            guard case .send(let range, _) = p.device.encrypt(peer: p.handle, buffer: slot, payloadLength: 0, now: clock.boottimeNanoseconds())
            else { continue }
            out.offsets[out.count] = 0
            out.lengths[out.count] = range.count
            out.endpoints[out.count] = gateway
            out.count += 1
        }
        _ = try bind.send(out, from: 0)
    }

    /// Counts transport messages from the gateway for `seconds`; opens one in 64 through each peer's
    /// device in turn (the one whose session it is opens it; the others drop it unchanged).
    static func receive(_ peers: [LoadPeer], bind: LinuxDatagramBind, seconds: Double, clock: SystemClock) throws {
        let rx = PacketBatch(capacity: 64, slotSize: 2048)
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 256, alignment: 16)
        defer { scratch.deallocate() }
        print("wgload: receiving for \(seconds) s")
        fflush(nil)  // capacity.sh waits for this line while we run (stdout is a file there: fully buffered)
        var total = 0, bytes = 0, sampled = 0, opened = 0, first: UInt64 = 0, last: UInt64 = 0
        let end = clock.monotonicNanoseconds() + UInt64(seconds * 1e9)
        while clock.monotonicNanoseconds() < end {
            // Done once the stream stopped: nothing for 700 ms after the first message.
            if first > 0 && clock.monotonicNanoseconds() - last > 700_000_000 { break }
            guard try bind.waitReadable(timeoutMilliseconds: 50) == .readable else { continue }
            let n = try bind.receive(into: rx)
            let t = clock.monotonicNanoseconds()
            for j in 0..<n {
                let msg = rx.packet(j)
                guard msg.count >= 32, msg[0] == UInt8(MessageType.transport.rawValue), msg[1] == 0, msg[2] == 0, msg[3] == 0 else { continue }
                if first == 0 { first = t }
                last = t
                total += 1
                bytes += msg.count
                if total % 64 == 0 {
                    sampled += 1
                    for p in peers {
                        if case .data = p.device.receive(msg, length: msg.count, from: Endpoint(address: IPAddress(v4: 0), port: 0),
                                                         now: clock.boottimeNanoseconds(), underLoad: false, output: scratch) {
                            opened += 1
                            break
                        }
                    }
                }
            }
        }
        let span = last > first ? Double(last - first) / 1e9 : 0
        print(String(format: "wgload: received %d transport messages (%d bytes) over %.3f s = %.0f pps; %d of %d sampled opened",
                     total, bytes, span, span > 0 ? Double(total) / span : 0, opened, sampled))
    }

    /// An IPv4/UDP packet into `buffer` (20 + 8 + payload bytes) as Linux sends one: DF, IPv4 ID
    /// `ident`, header and UDP checksums set, the payload's first 4 bytes the sequence number.
    /// (A zero UDP checksum or a fixed ID would keep a gateway's TUN write coalescing, like the
    /// kernel's GRO, from merging the flow's datagrams; real senders' datagrams do merge.)
    static func writeUDP4(_ buffer: inout [UInt8], from: IPAddress, sourcePort: UInt16, to: Endpoint, payload: Int,
                          sequence: UInt32, ident: UInt16 = 0) {
        let total = 28 + payload
        buffer.withUnsafeMutableBytes { b in
            b.initializeMemory(as: UInt8.self, repeating: 0)
            b[0] = 0x45
            b[2] = UInt8(total >> 8); b[3] = UInt8(total & 0xff)
            b[4] = UInt8(ident >> 8); b[5] = UInt8(ident & 0xff)
            b[6] = 0x40  // DF
            b[8] = 64; b[9] = 17
            let s = from.v4, d = to.address.v4
            for k in 0..<4 {
                b[12 + k] = UInt8(truncatingIfNeeded: s >> (24 - 8 * k))
                b[16 + k] = UInt8(truncatingIfNeeded: d >> (24 - 8 * k))
            }
            var c = InternetChecksum()
            c.add(UnsafeRawBufferPointer(rebasing: b[0..<20]))
            let sum = c.finalized
            b[10] = UInt8(sum >> 8); b[11] = UInt8(sum & 0xff)
            b[20] = UInt8(sourcePort >> 8); b[21] = UInt8(sourcePort & 0xff)
            b[22] = UInt8(to.port >> 8); b[23] = UInt8(to.port & 0xff)
            let udpLength = 8 + payload
            b[24] = UInt8(udpLength >> 8); b[25] = UInt8(udpLength & 0xff)
            if payload >= 4 {
                for k in 0..<4 { b[28 + k] = UInt8(truncatingIfNeeded: sequence >> (24 - 8 * k)) }
            }
            // UDP checksum over the pseudo-header (addresses, protocol, UDP length) and the datagram.
            var u = InternetChecksum()
            u.add(UnsafeRawBufferPointer(rebasing: b[12..<20]))
            u.add(UInt16(17))
            u.add(UInt32(udpLength))
            u.add(UnsafeRawBufferPointer(rebasing: b[20..<total]))
            var check = u.finalized
            if check == 0 { check = 0xFFFF }  // 0 means "no checksum" in IPv4 UDP
            b[26] = UInt8(check >> 8); b[27] = UInt8(check & 0xff)
        }
    }
}

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// `tunnelbench sink`: counts datagrams with recvmmsg.
enum SinkBench {
    static let name = "sink"
    static let summary = "count UDP datagrams and bytes (recvmmsg) until idle; for scripts/bench/capacity.sh"

    static func run(_ arguments: [String]) throws {
        var listen: Endpoint?, seconds = 30.0, idleMs = 1_000
        var i = 0
        while i < arguments.count {
            let v = i + 1 < arguments.count ? arguments[i + 1] : ""
            switch arguments[i] {
            case "--listen": listen = Endpoint(v)
            case "--seconds": seconds = Double(v) ?? 30
            case "--idle": idleMs = Int(v) ?? 1_000
            default: throw BenchFailure("sink: unknown argument '\(arguments[i])'")
            }
            i += 2
        }
        guard let listen else { throw BenchFailure("sink: --listen IP:PORT is required") }
        let bind = listen.address.isIPv6
            ? try LinuxDatagramBind(port: listen.port, bufferBytes: 32 << 20, ipv4: nil, ipv6: listen.address)
            : try LinuxDatagramBind(port: listen.port, bufferBytes: 32 << 20, ipv4: listen.address, ipv6: nil)
        FileHandle.standardOutput.write(Data("sink: listening on \(listen)\n".utf8))
        let rx = PacketBatch(capacity: 256, slotSize: 2048)
        let clock = SystemClock()
        let end = clock.monotonicNanoseconds() + UInt64(seconds * 1e9)
        var count = 0, bytes = 0, first: UInt64 = 0, last: UInt64 = 0
        while clock.monotonicNanoseconds() < end {
            if first > 0 && clock.monotonicNanoseconds() - last > UInt64(idleMs) * 1_000_000 { break }
            guard try bind.waitReadable(timeoutMilliseconds: 20) == .readable else { continue }
            let n = try bind.receive(into: rx)
            if n == 0 { continue }
            let t = clock.monotonicNanoseconds()
            if first == 0 { first = t }
            last = t
            count += n
            for j in 0..<n { bytes += rx.lengths[j] }
        }
        let span = last > first ? Double(last - first) / 1e9 : 0
        print(String(format: "sink: %d datagrams %d bytes in %.3f s = %.0f pps", count, bytes, span, span > 0 ? Double(count) / span : 0))
    }
}

/// `tunnelbench blast`: plain UDP to a list of addresses in turn.
enum BlastBench {
    static let name = "blast"
    static let summary = "send plain UDP to addresses in turn (sendmmsg), paced; for capacity.sh's server->client runs"

    static func run(_ arguments: [String]) throws {
        var targets: [IPAddress] = [], port: UInt16 = 9, size = 64, packets = 200_000, rate = 0.0, burst = 1
        var i = 0
        while i < arguments.count {
            let v = i + 1 < arguments.count ? arguments[i + 1] : ""
            switch arguments[i] {
            case "--to": targets = v.split(separator: ",").compactMap { IPAddress(String($0)) }
            case "--port": port = UInt16(v) ?? 9
            case "--size": size = Int(v) ?? 64
            case "--packets": packets = Int(v) ?? 200_000
            case "--rate": rate = Double(v) ?? 0
            case "--burst": burst = max(1, Int(v) ?? 1)
            default: throw BenchFailure("blast: unknown argument '\(arguments[i])'")
            }
            i += 2
        }
        guard !targets.isEmpty else { throw BenchFailure("blast: --to IP[,IP...] is required") }
        let bind = try LinuxDatagramBind(port: 0, bufferBytes: 16 << 20, ipv6: nil)
        let batch = PacketBatch(capacity: 64, slotSize: 2048)
        let payload = [UInt8](repeating: 0x5a, count: size)
        let clock = SystemClock()
        let start = clock.monotonicNanoseconds()
        var sent = 0, n = 0
        while sent < packets {
            if rate > 0 {
                let due = start + UInt64(Double(sent) / rate * 1e9)
                let t = clock.monotonicNanoseconds()
                if due > t {
                    Sys.sleep(nanoseconds: min(due - t, 1_000_000))
                    continue
                }
            }
            let k = min(64, packets - sent)
            for s in 0..<k {
                batch.set(s, bytes: payload, endpoint: Endpoint(address: targets[(n / burst) % targets.count], port: port))
                n += 1
            }
            batch.count = k
            var from = 0
            while from < k {
                let r = (try? bind.send(batch, from: from)) ?? 0
                if r == 0 { Sys.sleep(nanoseconds: 20_000) }
                from += r
            }
            sent += k
        }
        let elapsed = Double(clock.monotonicNanoseconds() - start) / 1e9
        print(String(format: "blast: sent %d datagrams of %d B to %d address(es), bursts of %d, in %.3f s = %.0f pps", sent, size, targets.count, burst, elapsed, Double(sent) / elapsed))
    }
}
