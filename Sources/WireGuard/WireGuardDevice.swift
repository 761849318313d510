// The device: our identity, the peer table, the index table, the cookie checker and rate limiter.
import Core
import Synchronization

/// A WireGuard interface as a pure state machine: no sockets, no threads, no clock. The gateway
/// feeds it datagrams (`receive`), outgoing IP packets (`encrypt`) and time (`tick`), and performs
/// the sends it asks for. See docs/wireguard.md for the data path and the threading contract.
///
/// Threading: every method may be called from any thread. Per-peer state sits behind one mutex per
/// peer, the index table and peer table behind their own mutexes (the index table's is innermost),
/// byte counters are atomics. No lock is held during transport encryption or decryption, and the
/// transport paths allocate nothing. Times are monotonic nanoseconds (`now`); only `initiation`
/// takes wall-clock time, for its TAI64N timestamp.
public final class WireGuardDevice: Sendable {
    /// Our static public key.
    public let publicKey: PublicKey
    /// Our static private key (32 bytes, zeroed when the device goes away).
    let privateKey: SecretBuffer
    /// mac1 key for messages sent to us.
    let mac1Key: [UInt8]
    /// Largest inner packet; padding never grows a packet beyond it (wireguard-go semantics).
    public let mtu: Int
    let random: any RandomSource
    let peers = Mutex(PeerTable())
    let indices = Mutex(IndexTable())
    let checker: Mutex<CookieChecker>
    let limiter = Mutex(RateLimiter())
    let drops = Mutex([UInt64](repeating: 0, count: DropReason.allCases.count))

    /// A device with our static private key (32 bytes), a random source and the tunnel MTU.
    /// Returns nil when the key is not 32 bytes.
    public init?(privateKey: [UInt8], random: any RandomSource = SystemRandom(), mtu: Int = 1420) {
        guard privateKey.count == 32, Sodium.ready else { return nil }
        self.privateKey = SecretBuffer.copy(of: privateKey)
        let pub = X25519.publicKey(of: privateKey)
        publicKey = PublicKey(pub)!
        mac1Key = MACs.mac1Key(pub)
        checker = Mutex(CookieChecker(publicKey: pub))
        self.random = random
        self.mtu = mtu
    }

    // MARK: Peers

    func peer(_ handle: PeerHandle) -> Peer? { peers.withLock { $0.byHandle[handle] } }

    /// Adds a peer, or updates it when its public key is already configured; returns its handle.
    /// With persistent keepalive on, the next `tick` asks for a keepalive (which, without a session,
    /// becomes a handshake), as wireguard-go does when such a peer is configured.
    @discardableResult
    public func addPeer(_ config: PeerConfiguration) -> PeerHandle {
        if let existing = peers.withLock({ $0.byKey[config.publicKey] }) {
            updatePeer(existing, config)
            return existing
        }
        let zeros = [UInt8](repeating: 0, count: 32)
        let ss = X25519.sharedSecret(privateKey.read(0, 32), config.publicKey.bytes) ?? zeros
        var state = PeerState(
            presharedKey: SecretBuffer.copy(of: config.presharedKey ?? zeros), staticStatic: SecretBuffer.copy(of: ss),
            persistentKeepalive: UInt64(config.persistentKeepaliveSeconds) * WireGuardProtocol.second,
            endpoint: config.endpoint)
        // Like wireguard-go's UAPI: turning persistent keepalive on sends one right away (next tick).
        if config.persistentKeepaliveSeconds > 0 { state.timers.persistentKeepalive = 0 }
        return peers.withLock { table in
            if let existing = table.byKey[config.publicKey] { return existing }
            let handle = PeerHandle(rawValue: table.nextHandle)
            table.nextHandle += 1
            table.byHandle[handle] = Peer(handle: handle, publicKey: config.publicKey, state: state)
            table.byKey[config.publicKey] = handle
            return handle
        }
    }

    /// Replaces a peer's pre-shared key and keepalive interval, and its endpoint when the
    /// configuration names one. The new key is used from the next handshake on. Turning persistent
    /// keepalive on makes the next `tick` ask for a keepalive. False if the handle is unknown.
    @discardableResult
    public func updatePeer(_ handle: PeerHandle, _ config: PeerConfiguration) -> Bool {
        guard let peer = peer(handle), peer.publicKey == config.publicKey else { return false }
        let psk = SecretBuffer.copy(of: config.presharedKey ?? [UInt8](repeating: 0, count: 32))
        peer.state.withLock { st in
            st.presharedKey = psk
            if st.persistentKeepalive == 0 && config.persistentKeepaliveSeconds > 0 { st.timers.persistentKeepalive = 0 }
            st.persistentKeepalive = UInt64(config.persistentKeepaliveSeconds) * WireGuardProtocol.second
            if let e = config.endpoint { st.endpoint = e }
        }
        return true
    }

    /// Removes a peer: its sessions and pending handshake are erased and its indices freed.
    public func removePeer(_ handle: PeerHandle) {
        guard let peer = peers.withLock({ table -> Peer? in
            guard let p = table.byHandle.removeValue(forKey: handle) else { return nil }
            table.byKey[p.publicKey] = nil
            return p
        }) else { return }
        peer.state.withLock { st in
            st.removed = true
            eraseKeysLocked(&st)
            st.timers.stopAll()
        }
    }

    /// The handle of the peer with `publicKey`, if configured.
    public func handle(for publicKey: PublicKey) -> PeerHandle? { peers.withLock { $0.byKey[publicKey] } }

    /// All peer handles in increasing order.
    public var peerHandles: [PeerHandle] { peers.withLock { $0.byHandle.keys.sorted() } }

    /// Refuses (or stops refusing) a peer: while refused, its initiations are verified and then
    /// answered with nothing (`receive` returns `.refused`), responses from it are ignored, and
    /// `encrypt`/`initiation` return `.refused`. Existing keys stay until `dropKeys`.
    public func setRefused(_ handle: PeerHandle, _ refused: Bool) {
        peer(handle)?.state.withLock { $0.refused = refused }
    }

    /// Kills a peer's session at once: current, previous and next keypairs and any pending handshake
    /// are erased (keys zeroed once no in-flight operation holds them) and its timers stopped.
    public func dropKeys(_ handle: PeerHandle) {
        peer(handle)?.state.withLock { st in
            eraseKeysLocked(&st)
            st.timers.stopAll()
        }
    }

    /// The peer's current endpoint (configured, or learnt from its last authenticated packet).
    public func endpoint(of handle: PeerHandle) -> Endpoint? { peer(handle)?.state.withLock { $0.endpoint } }

    /// A snapshot of the peer for reporting.
    public func status(of handle: PeerHandle) -> PeerStatus? {
        guard let peer = peer(handle) else { return nil }
        return peer.state.withLock { st in
            PeerStatus(
                handle: handle, publicKey: peer.publicKey, endpoint: st.endpoint, lastHandshake: st.lastHandshake,
                rxBytes: peer.rxBytes.load(ordering: .relaxed), txBytes: peer.txBytes.load(ordering: .relaxed),
                persistentKeepaliveSeconds: UInt16(st.persistentKeepalive / WireGuardProtocol.second),
                hasPresharedKey: !st.presharedKey.isZero, hasCurrentKeypair: st.current != nil,
                hasNextKeypair: st.next != nil, hasPreviousKeypair: st.previous != nil, refused: st.refused)
        }
    }

    /// Transport packets received from and sent to the peer (lock-free: two relaxed loads).
    public func packetCounts(of handle: PeerHandle) -> (rx: UInt64, tx: UInt64)? {
        guard let peer = peer(handle) else { return nil }
        return (peer.rxPackets.load(ordering: .relaxed), peer.txPackets.load(ordering: .relaxed))
    }

    /// How many datagrams were dropped for `reason` since the device was created.
    public func dropCount(_ reason: DropReason) -> UInt64 { drops.withLock { $0[reason.rawValue] } }

    /// Number of live receiver indices (sessions plus pending handshakes), for tests and status.
    public var indexCount: Int { indices.withLock { $0.count } }

    // MARK: Shared helpers (callers hold the peer's lock where the name says Locked)

    /// Erases all keypairs and the pending handshake of a peer; frees their indices.
    func eraseKeysLocked(_ st: inout PeerState) {
        let pending = st.handshake.initiationSent ? st.handshake.localIndex : nil
        let kps = [st.current, st.previous, st.next].compactMap { $0 }
        indices.withLock { idx in
            if let pending { idx.remove(pending) }
            for kp in kps { idx.remove(kp.localIndex) }
        }
        st.current = nil
        st.previous = nil
        st.next = nil
        st.handshake.clearPending()
    }

    /// Writes mac1 (and mac2 when we hold a fresh cookie from the peer) into a handshake message we
    /// send, remembering mac1 for a cookie reply.
    /// The mac1 key is derived from the peer's public key here, not kept per peer: one BLAKE2s
    /// beside a handshake's DH work, and 64 bytes less for each of thousands of idle peers.
    func addMACsLocked(_ msg: inout [UInt8], _ st: inout PeerState, peer: Peer, now: UInt64) {
        MACs.writeMAC1(&msg, key: MACs.mac1Key(peer.publicKey.bytes))
        st.lastMAC1 = Array(msg[(msg.count - 32)..<(msg.count - 16)])
        if let cookie = st.cookie, now &- st.cookieSetAt <= WireGuardProtocol.cookieRefreshTime {
            MACs.writeMAC2(&msg, cookie: cookie)
        }
    }

    /// Random jitter in 0 ..< REKEY_TIMEOUT_JITTER_MAX, in nanoseconds.
    func jitter() -> UInt64 {
        UInt64(random.uniform(WireGuardProtocol.rekeyTimeoutJitterMaxMilliseconds)) * 1_000_000
    }

    func count(_ reason: DropReason) -> ReceiveResult {
        drops.withLock { $0[reason.rawValue] += 1 }
        return .drop(reason)
    }
}
