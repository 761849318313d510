// Receiver index → pending handshake or keypair.
import Core

/// The device-wide map from our 32-bit indices to handshakes and keypairs (whitepaper §5.4.1:
/// indices are random, so they reveal nothing). Guarded by the device's `indices` mutex, which is
/// always the innermost lock.
struct IndexTable {
    private(set) var entries: [UInt32: IndexEntry] = [:]

    /// Allocates a fresh random index for `peer`'s pending handshake.
    mutating func allocate(for peer: Peer, random: any RandomSource) -> UInt32 {
        while true {
            let index = random.next32()
            if entries[index] == nil {
                entries[index] = IndexEntry(peer: peer, keypair: nil)
                return index
            }
        }
    }

    /// Points `index` at a keypair (the handshake's index becomes the session's index).
    mutating func install(_ keypair: Keypair, peer: Peer) {
        entries[keypair.localIndex] = IndexEntry(peer: peer, keypair: keypair)
    }

    /// Forgets `index`.
    mutating func remove(_ index: UInt32) { entries[index] = nil }

    /// The entry for `index`.
    func lookup(_ index: UInt32) -> IndexEntry? { entries[index] }

    /// Number of live indices.
    var count: Int { entries.count }
}
