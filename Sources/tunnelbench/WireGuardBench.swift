// tunnelbench wireguard: handshake rate, transport throughput through the WireGuard core API, and
// raw libsodium ChaCha20-Poly1305 on the same sizes for the ratio.
import Core
import CSodium
import Foundation
import Packet
import Runtime
import WireGuard

private func monotonicNanoseconds() -> UInt64 { SystemClock().monotonicNanoseconds() }

/// CPU time of this thread: "per core" figures stay meaningful on a shared, loaded machine.
private func cpuNanoseconds() -> UInt64 { SystemClock.threadCPUNanoseconds() }

private let benchA = Endpoint(address: IPAddress("192.0.2.1")!, port: 51820)
private let benchB = Endpoint(address: IPAddress("192.0.2.2")!, port: 51820)

/// Runs the `wireguard` benchmark group. Options: `--seconds S` (per measurement, default 1).
/// Rates are per CPU-second of the measuring thread (CLOCK_THREAD_CPUTIME_ID), i.e. per core.
func wireguardBench(_ args: [String]) throws {
    var seconds = 1.0
    if let i = args.firstIndex(of: "--seconds"), i + 1 < args.count, let s = Double(args[i + 1]) { seconds = s }
    let random = SystemRandom()
    guard let a = WireGuardDevice(privateKey: random.bytes(32)), let b = WireGuardDevice(privateKey: random.bytes(32))
    else { throw BenchError.setup }
    let peerB = a.addPeer(PeerConfiguration(publicKey: b.publicKey, endpoint: benchB))
    let peerA = b.addPeer(PeerConfiguration(publicKey: a.publicKey))

    // Handshake responses: pre-build initiations (each newer than the last), then time B answering them.
    let count = max(200, Int(4000 * seconds))
    var initiations = [UInt8](repeating: 0, count: count * 148)
    var now: UInt64 = 1_000_000_000
    initiations.withUnsafeMutableBytes { all in
        for i in 0..<count {
            let slot = UnsafeMutableRawBufferPointer(rebasing: all[(i * 148)..<((i + 1) * 148)])
            now += WireGuardProtocol.rekeyTimeout
            _ = a.initiation(for: peerB, into: slot, now: now, wallClock: now)
        }
    }
    var output = [UInt8](repeating: 0, count: 256)
    var responses = 0
    let hsStart = cpuNanoseconds()
    initiations.withUnsafeMutableBytes { all in
        output.withUnsafeMutableBytes { out in
            for i in 0..<count {
                let slot = UnsafeMutableRawBufferPointer(rebasing: all[(i * 148)..<((i + 1) * 148)])
                now += WireGuardProtocol.handshakeInitiationRate + 1
                if case .sendResponse = b.receive(slot, length: 148, from: benchA, now: now, underLoad: false, output: out) {
                    responses += 1
                }
            }
        }
    }
    let hsElapsed = Double(cpuNanoseconds() - hsStart) / 1e9
    print(String(format: "handshake responses: %d in %.3f s CPU = %.0f /s per core (bar 5000/s)", responses, hsElapsed,
                 Double(responses) / hsElapsed))

    // A fresh session, confirmed both ways, for transport.
    now += WireGuardProtocol.rekeyTimeout
    var ini = [UInt8](repeating: 0, count: 148)
    _ = ini.withUnsafeMutableBytes { a.initiation(for: peerB, into: $0, now: now, wallClock: now) }
    var resp = [UInt8](repeating: 0, count: 92)
    _ = ini.withUnsafeMutableBytes { i in resp.withUnsafeMutableBytes { b.receive(i, length: 148, from: benchA, now: now, underLoad: false, output: $0) } }
    _ = resp.withUnsafeMutableBytes { r in output.withUnsafeMutableBytes { a.receive(r, length: 92, from: benchB, now: now, underLoad: false, output: $0) } }
    var ka = [UInt8](repeating: 0, count: 64)
    _ = ka.withUnsafeMutableBytes { a.encrypt(peer: peerB, buffer: $0, payloadLength: 0, now: now) }
    _ = ka.withUnsafeMutableBytes { k in output.withUnsafeMutableBytes { b.receive(k, length: 32, from: benchA, now: now, underLoad: false, output: $0) } }

    aeadBackends(seconds: seconds)
    for size in [1420, 64] {
        // Alternate short API and raw runs so both see the same machine load; keep the best of each.
        var r = (enc: 0.0, dec: 0.0, allocations: UInt64(0))
        var raw = (enc: 0.0, dec: 0.0)
        for _ in 0..<5 {
            let x = transport(size: size, a: a, b: b, peerB: peerB, now: now, seconds: seconds / 5)
            r = (max(r.enc, x.enc), max(r.dec, x.dec), r.allocations + x.allocations)
            let y = rawSodium(size: size, seconds: seconds / 5)
            raw = (max(raw.enc, y.enc), max(raw.dec, y.dec))
        }
        print(String(format: "%4d B  encrypt %.2f GB/s (%.2f Mpps)  raw libsodium %.2f GB/s  ratio %.2f", size, r.enc / 1e9,
                     r.enc / Double(size) / 1e6, raw.enc / 1e9, r.enc / raw.enc))
        print(String(format: "%4d B  decrypt %.2f GB/s (%.2f Mpps)  raw libsodium %.2f GB/s  ratio %.2f", size, r.dec / 1e9,
                     r.dec / Double(size) / 1e6, raw.dec / 1e9, r.dec / raw.dec))
        print(String(format: "%4d B  heap allocations in the transport loops: %llu (must be 0)", size, r.allocations))
    }
    _ = peerA
}

private enum BenchError: Error { case setup }

/// libsodium against OpenSSL EVP through `AEAD.seal/open(backend)`, per message size: the rates
/// the `AEAD.openSSLFromLength` threshold comes from. Five alternating rounds; best and worst.
private func aeadBackends(seconds: Double) {
    print("AEAD backends (ChaCha20-Poly1305, GB/s of payload per core; best..worst of 5 alternating rounds; \(AEAD.openSSLFromLength) B and up use OpenSSL)")
    for size in [64, 256, 512, 528, 576, 640, 1024, 1420] {
        var rates: [AEAD.Backend: [(enc: Double, dec: Double)]] = [:]
        var allocations: UInt64 = 0
        for _ in 0..<5 {
            for backend in AEAD.Backend.allCases {
                let r = rawBackend(backend, size: size, seconds: seconds / 10)
                rates[backend, default: []].append((r.enc, r.dec))
                allocations += r.allocations
            }
        }
        func span(_ b: AEAD.Backend, _ enc: Bool) -> (best: Double, worst: Double) {
            let v = rates[b]!.map { enc ? $0.enc : $0.dec }
            return (v.max()!, v.min()!)
        }
        for (label, enc) in [("seal", true), ("open", false)] {
            let s = span(.sodium, enc), o = span(.openssl, enc)
            print(String(format: "%5d B  %@  libsodium %.2f..%.2f  openssl %.2f..%.2f  openssl/libsodium %.2f (%.2f..%.2f)",
                         size, label, s.best / 1e9, s.worst / 1e9, o.best / 1e9, o.worst / 1e9, o.best / s.best, o.worst / s.best, o.best / s.worst))
        }
        print(String(format: "%5d B  heap allocations in the AEAD loops: %llu (must be 0)", size, allocations))
    }
}

/// seal then open `batch` distinct messages of `size` bytes through one backend, repeatedly.
private func rawBackend(_ backend: AEAD.Backend, size: Int, seconds: Double) -> (enc: Double, dec: Double, allocations: UInt64) {
    let stride = size + 16
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: stride * batch, alignment: 64)
    defer { buffer.deallocate() }
    let key = UnsafeMutableRawBufferPointer.allocate(byteCount: 32, alignment: 16)
    defer { key.deallocate() }
    key.initializeMemory(as: UInt8.self, repeating: 7)
    var encNanos: UInt64 = 0, decNanos: UInt64 = 0, packets = 0, failures = 0
    let deadline = monotonicNanoseconds() + UInt64(seconds * 1e9)
    var counter: UInt64 = 0
    // One message first, outside the count: OpenSSL makes this thread's contexts once.
    AEAD.seal(backend, key: key.baseAddress!, counter: 0, data: buffer.baseAddress!, length: size, ad: nil, adLength: 0)
    _ = AEAD.open(backend, key: key.baseAddress!, counter: 0, data: buffer.baseAddress!, length: stride, ad: nil, adLength: 0)
    let allocBefore = allocationCount()
    while monotonicNanoseconds() < deadline {
        for i in 0..<batch { (buffer.baseAddress! + i * stride).initializeMemory(as: UInt8.self, repeating: 0x5a, count: size) }
        let t0 = cpuNanoseconds()
        for i in 0..<batch {
            AEAD.seal(backend, key: key.baseAddress!, counter: counter + UInt64(i), data: buffer.baseAddress! + i * stride, length: size, ad: nil, adLength: 0)
        }
        let t1 = cpuNanoseconds()
        for i in 0..<batch {
            if !AEAD.open(backend, key: key.baseAddress!, counter: counter + UInt64(i), data: buffer.baseAddress! + i * stride, length: stride, ad: nil, adLength: 0) {
                failures += 1
            }
        }
        let t2 = cpuNanoseconds()
        encNanos += t1 - t0
        decNanos += t2 - t1
        packets += batch
        counter += UInt64(batch)
    }
    let allocations = allocationCount() - allocBefore
    precondition(failures == 0, "AEAD \(backend) failed to open its own messages")
    let bytes = Double(packets * size)
    return (bytes / (Double(encNanos) / 1e9), bytes / (Double(decNanos) / 1e9), allocations)
}

private let batch = 512

/// Encrypt throughput (payload bytes/s) through `encrypt`, and decrypt throughput through `receive`
/// over batches of distinct packets (the replay window forbids reusing one).
private func transport(size: Int, a: WireGuardDevice, b: WireGuardDevice, peerB: PeerHandle, now: UInt64,
                       seconds: Double) -> (enc: Double, dec: Double, allocations: UInt64)
{
    let stride = 16 + a.sealedLength(size) + 16
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: stride * batch, alignment: 64)
    let out = UnsafeMutableRawBufferPointer.allocate(byteCount: 256, alignment: 16)
    defer {
        buffer.deallocate()
        out.deallocate()
    }
    var packet = [UInt8](repeating: 0x5a, count: size)
    packet[0] = 0x45
    packet[2] = UInt8(size >> 8)
    packet[3] = UInt8(size & 0xff)
    var encNanos: UInt64 = 0, decNanos: UInt64 = 0, packets = 0
    var lengths = [Int](repeating: 0, count: batch)
    let deadline = monotonicNanoseconds() + UInt64(seconds * 2e9)
    let allocBefore = allocationCount()
    packet.withUnsafeBytes { p in
        while monotonicNanoseconds() < deadline {
            for i in 0..<batch { (buffer.baseAddress! + i * stride + 16).copyMemory(from: p.baseAddress!, byteCount: size) }
            let t0 = cpuNanoseconds()
            for i in 0..<batch {
                let slot = UnsafeMutableRawBufferPointer(start: buffer.baseAddress! + i * stride, count: stride)
                if case .send(let range, _) = a.encrypt(peer: peerB, buffer: slot, payloadLength: size, now: now) {
                    lengths[i] = range.count
                }
            }
            let t1 = cpuNanoseconds()
            for i in 0..<batch {
                let slot = UnsafeMutableRawBufferPointer(start: buffer.baseAddress! + i * stride, count: stride)
                _ = b.receive(slot, length: lengths[i], from: benchA, now: now, underLoad: false, output: out)
            }
            let t2 = cpuNanoseconds()
            encNanos += t1 - t0
            decNanos += t2 - t1
            packets += batch
        }
    }
    let allocations = allocationCount() - allocBefore
    let bytes = Double(packets * size)
    return (bytes / (Double(encNanos) / 1e9), bytes / (Double(decNanos) / 1e9), allocations)
}

/// The same loops with libsodium's crypto_aead_chacha20poly1305_ietf directly (the upper bound).
private func rawSodium(size: Int, seconds: Double) -> (enc: Double, dec: Double) {
    let padded = (size + 15) & ~15
    let stride = 16 + padded + 16
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: stride * batch, alignment: 64)
    defer { buffer.deallocate() }
    var key = [UInt8](repeating: 7, count: 32)
    var encNanos: UInt64 = 0, decNanos: UInt64 = 0, packets = 0
    let deadline = monotonicNanoseconds() + UInt64(seconds * 2e9)
    var counter: UInt64 = 0
    key.withUnsafeMutableBytes { k in
        let kp = k.baseAddress!.assumingMemoryBound(to: UInt8.self)
        while monotonicNanoseconds() < deadline {
            for i in 0..<batch { (buffer.baseAddress! + i * stride + 16).initializeMemory(as: UInt8.self, repeating: 0x5a, count: padded) }
            let t0 = cpuNanoseconds()
            for i in 0..<batch {
                var nonce: (UInt64, UInt64) = ((counter + UInt64(i)) << 32, (counter + UInt64(i)) >> 32)
                let m = (buffer.baseAddress! + i * stride + 16).assumingMemoryBound(to: UInt8.self)
                withUnsafeBytes(of: &nonce) { n in
                    _ = crypto_aead_chacha20poly1305_ietf_encrypt(m, nil, m, UInt64(padded), nil, 0, nil,
                                                                  n.baseAddress!.assumingMemoryBound(to: UInt8.self), kp)
                }
            }
            let t1 = cpuNanoseconds()
            for i in 0..<batch {
                var nonce: (UInt64, UInt64) = ((counter + UInt64(i)) << 32, (counter + UInt64(i)) >> 32)
                let m = (buffer.baseAddress! + i * stride + 16).assumingMemoryBound(to: UInt8.self)
                withUnsafeBytes(of: &nonce) { n in
                    _ = crypto_aead_chacha20poly1305_ietf_decrypt(m, nil, nil, m, UInt64(padded + 16), nil, 0,
                                                                  n.baseAddress!.assumingMemoryBound(to: UInt8.self), kp)
                }
            }
            let t2 = cpuNanoseconds()
            encNanos += t1 - t0
            decNanos += t2 - t1
            packets += batch
            counter += UInt64(batch)
        }
    }
    let bytes = Double(packets * size)
    return (bytes / (Double(encNanos) / 1e9), bytes / (Double(decNanos) / 1e9))
}
