// One entry of the index table.
import Core

/// What a local index names: a handshake we sent (waiting for its response), or a session.
struct IndexEntry {
    let peer: Peer
    /// Nil while the index names a pending handshake.
    let keypair: Keypair?
}
