import Store

/// The store's `PeerTier` under a name that does not clash with `Control.PeerTier` (the module
/// `Store` is shadowed by its class `Store`, so `Store.PeerTier` cannot be spelled).
typealias StorePeerTier = PeerTier
