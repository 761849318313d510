// libFuzzer harness for host learning: DNSAnswers + AddressNameCache, FirstFlightBuffer +
// TLSClientHello / HTTPRequestHost, and QUICInitialReader (raw datagrams, and fuzzed plaintext
// sealed as a real v1/v2 Initial so the frame and ClientHello paths are reached). Built together
// with Sources/Packet/*.swift and Sources/Packet/QUIC/*.swift into one module (see README.md); a
// crash, an AddressSanitizer report or a failed precondition below is a bug.
//
// The first input byte picks the target (mod 6); the rest is the input.
import COpenSSL
import Core

nonisolated(unsafe) let dns = DNSAnswers(maxChain: 4, maxAnswers: 16)
nonisolated(unsafe) let cache = AddressNameCache(capacity: 32, bytesPerAddress: 300, ttlFloor: 1, ttlCeiling: 100)
nonisolated(unsafe) let flight = FirstFlightBuffer(capacity: 4096)
nonisolated(unsafe) let quic = QUICInitialReader()
nonisolated(unsafe) let crypto = FirstFlightBuffer()
nonisolated(unsafe) var clock: Int64 = 0
nonisolated(unsafe) let streams = DNSStreamAssembler(streams: 1, maxMessage: 65_535)
nonisolated(unsafe) let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)

@_cdecl("LLVMFuzzerTestOneInput")
public func hostsFuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    // Copy into an exactly sized allocation so ASan catches any read past the end.
    let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: size - 1, alignment: 1)
    defer { copy.deallocate() }
    if size > 1 { copy.copyMemory(from: UnsafeRawBufferPointer(start: data + 1, count: size - 1)) }
    let input = UnsafeRawBufferPointer(copy)
    clock &+= 250
    switch data[0] % 6 {
    case 0, 1: fuzzDNS(input, tcp: data[0] % 6 == 1)
    case 2: fuzzReassembly(input, seed: data[0])
    case 3: fuzzQUICDatagram(input)
    default: fuzzQUICPlaintext(input, version: data[0] & 0x80 == 0 ? .v1 : .v2)
    }
    return 0
}

func checkName(_ n: UnsafeRawBufferPointer) {
    precondition(n.count <= 254)
    for c in n { precondition(!(c >= 0x41 && c <= 0x5A), "names are lower-cased") }
}

func fuzzDNS(_ m: UnsafeRawBufferPointer, tcp: Bool) {
    if tcp { fuzzTCPStream(m) }
    let outcome = tcp ? dns.parse(tcpPayload: m) : dns.parse(m)
    guard outcome == .answered else {
        precondition(dns.answerCount == 0 || dns.answerCount <= dns.maxAnswers)
        return
    }
    precondition(dns.answerCount <= dns.maxAnswers && dns.chainCount <= dns.maxChain)
    checkName(dns.queryName)
    for c in 0..<dns.chainCount { checkName(dns.chain(c)) }
    for a in 0..<dns.answerCount { precondition(dns.answer(a).chainDepth <= dns.chainCount) }
    cache.learn(peer: UInt32(m.count & 3), from: dns, now: clock)
    precondition(cache.count <= cache.capacity)
    for a in 0..<dns.answerCount {
        var names = 0
        for n in cache.names(peer: UInt32(m.count & 3), address: dns.answer(a).address, now: clock) {
            precondition(!n.isEmpty && n.count <= 253)
            names += 1
        }
        precondition(names <= 300 / 10)
    }
}

/// DNS over TCP cut into pieces (in order, as segments): the assembler must hand out exactly the
/// length-prefixed messages the input holds read whole, and forget the connection at its end.
func fuzzTCPStream(_ input: UnsafeRawBufferPointer) {
    var want: [[UInt8]] = []
    var i = 0
    while i + 2 <= input.count {
        let n = Int(input[i]) << 8 | Int(input[i + 1])
        guard i + 2 + n <= input.count else { break }
        want.append(Array(input[(i + 2)..<(i + 2 + n)]))
        i += 2 + n
    }
    let key = DNSStreamAssembler.Key(peer: 1, server: IPAddress(v4: 1), serverPort: 53, client: IPAddress(v4: 2), clientPort: 9)
    var got: [[UInt8]] = []
    var at = 0
    var x = UInt32(truncatingIfNeeded: input.count) | 1
    while at < input.count {
        x = x &* 1_103_515_245 &+ 12345
        let len = min(input.count - at, 1 + Int(x >> 20) % 40)
        let last = at + len == input.count
        let problem = streams.feed(key, sequence: 7 &+ UInt32(at), payload: UnsafeRawBufferPointer(rebasing: input[at..<(at + len)]),
                                   closing: last) { got.append(Array($0)) }
        precondition(problem == nil, "in-order segments within the bound: nothing dropped")
        at += len
    }
    precondition(got == want, "messages differ from the input read whole")
    precondition(streams.active == 0, "the closing segment forgets the connection")
}

/// Feeds the input as pieces in a scrambled order; once all are in, the extractors must say
/// exactly what they say of the input read whole.
func fuzzReassembly(_ input: UnsafeRawBufferPointer, seed: UInt8) {
    let n = min(input.count, flight.capacity)
    let whole = UnsafeRawBufferPointer(rebasing: input[0..<n])
    let isn = UInt32(truncatingIfNeeded: n &* 2_654_435_761)
    flight.reset(initialSequence: isn)
    var cuts: [Int] = [0]
    var x = UInt32(seed) | 1
    while cuts.count < 8 {
        x = x &* 1_103_515_245 &+ 12345
        cuts.append(n == 0 ? 0 : Int(x >> 8) % (n + 1))
    }
    cuts.append(n)
    cuts.sort()
    for k in stride(from: cuts.count - 2, through: 0, by: -1) {
        let piece = UnsafeRawBufferPointer(rebasing: whole[cuts[k]..<cuts[k + 1]])
        flight.insert(sequence: isn &+ UInt32(cuts[k]), piece)
        precondition(flight.contiguousCount <= n)
        let partial = TLSClientHello.serverName(in: flight.contiguous)
        if case .found(let r) = partial { precondition(r.upperBound <= flight.contiguousCount) }
    }
    precondition(flight.contiguousCount == n)
    for i in 0..<n { precondition(flight.contiguous[i] == whole[i]) }
    precondition(TLSClientHello.serverName(in: flight.contiguous) == TLSClientHello.serverName(in: whole))
    precondition(HTTPRequestHost.host(in: flight.contiguous) == HTTPRequestHost.host(in: whole))
    let either = FirstFlightHost.find(in: whole, scratch: scratch)
    if case .found(let r) = either.extraction {
        precondition(either.source != nil && r.upperBound <= either.bytes.count)
        precondition(HostExtraction.isValidHostName(UnsafeRawBufferPointer(rebasing: either.bytes[r])))
    }
    let (joined, view) = TLSClientHello.serverName(acrossRecords: whole, scratch: scratch)
    precondition(view.count <= min(whole.count, scratch.count))
    if case .found(let r) = joined { precondition(HostExtraction.isValidHostName(UnsafeRawBufferPointer(rebasing: view[r]))) }
    let handshake = TLSClientHello.serverName(inHandshake: whole)
    if case .found(let r) = handshake { precondition(HostExtraction.isValidHostName(UnsafeRawBufferPointer(rebasing: whole[r]))) }
}

func checkQUIC(_ o: QUICInitialOutcome) {
    if case .clientHello(.found(let r)) = o {
        precondition(r.upperBound <= crypto.contiguousCount)
        precondition(HostExtraction.isValidHostName(UnsafeRawBufferPointer(rebasing: crypto.contiguous[r])))
    }
}

func fuzzQUICDatagram(_ d: UnsafeRawBufferPointer) {
    crypto.reset()
    checkQUIC(quic.read(datagram: d, into: crypto))
}

/// Seals the input as the payload of a client Initial for a fixed DCID, like a client would.
func fuzzQUICPlaintext(_ plain: UnsafeRawBufferPointer, version: QUICVersion) {
    let dcid: [UInt8] = [0x83, 0x94, 0xC8, 0xF0, 0x3E, 0x51, 0x57, 0x08]
    guard let keys = quic.derivedKeyBytes(version, dcid: dcid), plain.count >= 1, plain.count <= 1400 else { return }
    var header: [UInt8] = [0xC0 | (version.initialType << 4) | 0x03]
    for s in [24, 16, 8, 0] { header.append(UInt8((version.rawValue >> UInt32(s)) & 0xFF)) }
    header += [8] + dcid + [0, 0]
    let length = 4 + plain.count + 16
    header += [0x40 | UInt8(length >> 8), UInt8(length & 0xFF)]
    let pnAt = header.count
    header += [0, 0, 0, 1]
    var nonce = keys.iv
    nonce[11] ^= 1
    var cipher = [UInt8](repeating: 0, count: plain.count)
    var tag = [UInt8](repeating: 0, count: 16)
    var n: Int32 = 0
    let ctx = EVP_CIPHER_CTX_new()
    defer { EVP_CIPHER_CTX_free(ctx) }
    guard EVP_EncryptInit_ex(ctx, EVP_aes_128_gcm(), nil, keys.key, nonce) == 1,
          EVP_EncryptUpdate(ctx, nil, &n, header, Int32(header.count)) == 1,
          EVP_EncryptUpdate(ctx, &cipher, &n, plain.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(plain.count)) == 1,
          EVP_EncryptFinal_ex(ctx, &tag, &n) == 1,
          EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, &tag) == 1
    else { preconditionFailure("sealing failed") }
    var packet = header + cipher + tag
    var mask = [UInt8](repeating: 0, count: 32)
    let ecb = EVP_CIPHER_CTX_new()
    defer { EVP_CIPHER_CTX_free(ecb) }
    let sample = Array(packet[(pnAt + 4)..<(pnAt + 20)])
    guard EVP_EncryptInit_ex(ecb, EVP_aes_128_ecb(), nil, keys.hp, nil) == 1, EVP_EncryptUpdate(ecb, &mask, &n, sample, 16) == 1 else {
        preconditionFailure("header protection failed")
    }
    packet[0] ^= mask[0] & 0x0F
    for j in 0..<4 { packet[pnAt + j] ^= mask[1 + j] }
    crypto.reset()
    let o = packet.withUnsafeBytes { quic.read(datagram: $0, into: crypto) }
    // It decrypts (the tag is right), so the only failure left is in the frames.
    switch o {
    case .clientHello, .failed(.badFrame): break
    default: preconditionFailure("a sealed Initial gave \(o)")
    }
    checkQUIC(o)
}
