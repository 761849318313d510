import SystemIO
import Core
/// Packets waiting for a peer's handshake to complete (WireGuard "staged packets"): a bounded
/// FIFO with storage allocated once per peer, on its first queued packet. When full, the oldest
/// packet is dropped (wireguard-go keeps the newest too) and counted.
final class PendingPackets: @unchecked Sendable {
    // Safe: every instance lives in `GatewayEngine.pending` and is only touched under that mutex.
    let capacity: Int
    private let slotBytes: Int
    private let storage: UnsafeMutableRawPointer
    private var lengths: [Int]
    private var head = 0
    private(set) var count = 0

    init(capacity: Int, mtu: Int) {
        self.capacity = capacity
        slotBytes = mtu
        storage = .allocate(byteCount: capacity * mtu, alignment: 16)
        lengths = [Int](repeating: 0, count: capacity)
    }

    deinit { storage.deallocate() }

    /// Copies `packet` in; returns false when the oldest packet had to be dropped to make room
    /// (or the packet is longer than the MTU and was not queued).
    func push(_ packet: UnsafeRawBufferPointer) -> Bool {
        guard packet.count <= slotBytes else { return false }
        var dropped = false
        if count == capacity {
            head = (head + 1) % capacity
            count -= 1
            dropped = true
        }
        let slot = (head + count) % capacity
        (storage + slot * slotBytes).copyMemory(from: packet.baseAddress!, byteCount: packet.count)
        lengths[slot] = packet.count
        count += 1
        return !dropped
    }

    /// Removes the oldest packet, copying it to `out`; returns its length, or nil when empty.
    func pop(into out: UnsafeMutableRawBufferPointer) -> Int? {
        guard count > 0 else { return nil }
        let len = lengths[head]
        out.baseAddress!.copyMemory(from: storage + head * slotBytes, byteCount: min(len, out.count))
        head = (head + 1) % capacity
        count -= 1
        return len
    }

    func removeAll() {
        head = 0
        count = 0
    }
}
