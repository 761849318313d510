// libFuzzer harness for the rtnetlink reply parser (SystemIO's NetlinkReply): each input is one
// buffer as NetlinkSocket receives it from the kernel, walked the way every request walks its
// replies — for an acknowledgement alone (set MTU, addresses, link, routes) and for RTM_GETLINK's
// RTM_NEWLINK with its attributes — with the sequence and port checks off, with the ones the seeds
// carry, and with those of the input's first header. Never a crash, an out-of-bounds read (the
// bytes are copied into a buffer of exactly their size, so ASan sees one byte past) or a hang.
import Glibc
import SystemIO

/// The sequence number and port id make_seeds.py writes into every seed.
let seedSequence: UInt32 = 0x5eed_0001
let seedPort: UInt32 = 0x0000_4242

@_cdecl("LLVMFuzzerTestOneInput")
public func test(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let copy = UnsafeMutableRawPointer.allocate(byteCount: max(count, 1), alignment: 16)
    defer { copy.deallocate() }
    if let start, count > 0 { copy.copyMemory(from: start, byteCount: count) }
    let bytes = UnsafeRawBufferPointer(start: copy, count: count)

    var checks: [(UInt32, UInt32)] = [(0, 0), (seedSequence, seedPort)]
    if count >= 16 {
        checks.append((bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self),
                       bytes.loadUnaligned(fromByteOffset: 12, as: UInt32.self)))
    }
    for (sequence, port) in checks {
        let ack = NetlinkReply.process(bytes, sequence: sequence, portID: port)
        var link = NetlinkSocket.Link(index: 0, mtu: 0, isUp: false)
        let got = NetlinkReply.link(bytes, sequence: sequence, portID: port, into: &link)
        for outcome in [ack, got] {
            if case .failed(let e) = outcome, e == 0 { fatalError("failed without an errno") }
        }
        // Without data messages in the way both walks see the same control messages; the link walk
        // may only stop earlier (a short RTM_NEWLINK) — never succeed where the plain walk failed.
        if case .failed = ack, got == .done { fatalError("link walk acknowledged what the ack walk refused") }
    }
    return 0
}
