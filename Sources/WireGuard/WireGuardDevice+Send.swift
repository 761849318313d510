// The send path: initiations and transport encryption.
//
// `encrypt` takes the peer's lock only to pick the current keypair, reserve a counter and update
// timers; padding, the header and ChaCha20-Poly1305 happen in the caller's buffer with no lock held
// and no allocation. With no usable keypair it says `.handshakeNeeded`: the caller queues the
// packet and calls `initiation(for:)`, then sends the queue on `.handshakeComplete` /
// `sessionConfirmed`.
import Core
import Synchronization

extension WireGuardDevice {
    /// Builds a handshake initiation for `peer` into `buffer` (≥ 148 bytes).
    ///
    /// - `retry`: true only when answering `TimerAction.sendInitiation(retry: true)`; any other call
    ///   restarts the REKEY_ATTEMPT_TIME budget, as wireguard-go does.
    /// - `wallClock`: nanoseconds since 1970 for the TAI64N timestamp; it must not go backwards
    ///   (the peer rejects timestamps not newer than the last one it accepted).
    /// Returns `.handshakeInProgress` when an initiation went out less than REKEY_TIMEOUT ago.
    public func initiation(for handle: PeerHandle, retry: Bool = false, into buffer: UnsafeMutableRawBufferPointer,
                           now: UInt64, wallClock: UInt64) -> SendResult
    {
        guard buffer.count >= MessageLayout.Initiation.size, let base = buffer.baseAddress else {
            return .bufferTooSmall
        }
        guard let peer = peer(handle) else { return .unknownPeer }
        var privateKey = self.privateKey.read(0, 32)
        defer { Sodium.zero(&privateKey) }
        return peer.state.withLock { st -> SendResult in
            if st.refused { return .refused }
            if st.removed { return .unknownPeer }
            if !retry { st.timers.handshakeAttempts = 0 }
            st.timers.wantInitiation = false
            if let last = st.handshake.lastSentHandshake, now &- last < WireGuardProtocol.rekeyTimeout {
                return .handshakeInProgress
            }
            guard !st.staticStatic.isZero else { return .unknownPeer }
            var ephemeral = X25519.generatePrivateKey(random)
            defer { Sodium.zero(&ephemeral) }
            let old = st.handshake.initiationSent ? st.handshake.localIndex : nil
            let localIndex = indices.withLock { idx -> UInt32 in
                if let old { idx.remove(old) }
                return idx.allocate(for: peer, random: random)
            }
            st.handshake.clearPending()
            guard var built = Noise.createInitiation(
                senderIndex: localIndex, localStaticPublic: publicKey.bytes, remoteStaticPublic: peer.publicKey.bytes,
                staticStatic: st.staticStatic.read(0, 32), ephemeralPrivate: ephemeral,
                timestamp: TAI64N(unixNanoseconds: wallClock))
            else {
                indices.withLock { $0.remove(localIndex) }
                return .unknownPeer
            }
            st.handshake.initiationSent = true
            st.handshake.localIndex = localIndex
            let secrets = st.handshake.pendingSecrets()
            secrets.write(built.state.chainKey, at: 0)
            secrets.write(built.state.hash, at: 32)
            secrets.write(ephemeral, at: 64)
            built.state.wipe()
            st.handshake.lastSentHandshake = now
            var msg = built.message
            addMACsLocked(&msg, &st, peer: peer, now: now)
            st.timers.anyAuthenticatedPacketTraversal(now: now, persistentInterval: st.persistentKeepalive)
            st.timers.anyAuthenticatedPacketSent(now: now)
            st.timers.handshakeInitiated(now: now, jitter: jitter())
            msg.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            peer.txBytes.add(UInt64(msg.count), ordering: .relaxed)
            let range = 0..<msg.count
            return st.endpoint.map { .send(range: range, to: $0) } ?? .noEndpoint(range: range)
        }
    }

    /// The padded plaintext length for a packet of `length` bytes: a multiple of 16, but never
    /// beyond the MTU (wireguard-go `calculatePaddingSize`).
    @inline(__always)
    public func paddedLength(_ length: Int) -> Int {
        var last = length
        if mtu > 0 && last > mtu { last %= mtu }
        var padded = (last + WireGuardProtocol.paddingMultiple - 1) & ~(WireGuardProtocol.paddingMultiple - 1)
        if mtu > 0 && padded > mtu { padded = mtu }
        return length + (padded - last)
    }

    /// The buffer size `encrypt` needs for a payload of `length` bytes: header + padded payload + tag.
    @inline(__always)
    public func sealedLength(_ length: Int) -> Int {
        MessageLayout.Transport.headerSize + paddedLength(length) + AEAD.tagSize
    }

    /// Encrypts an IP packet for `peer` in place, without allocating.
    ///
    /// The caller puts `payloadLength` bytes of plaintext at `buffer[16 ..< 16 + payloadLength]`
    /// (16 bytes of headroom for the header); `buffer` must hold `sealedLength(payloadLength)` bytes
    /// (room for zero padding to a multiple of 16 and the 16-byte tag). On `.send` the transport
    /// message is `buffer[range]`, starting at 0. A `payloadLength` of 0 makes a keepalive.
    @inline(__always)
    public func encrypt(peer handle: PeerHandle, buffer: UnsafeMutableRawBufferPointer, payloadLength: Int,
                        now: UInt64) -> SendResult
    {
        guard payloadLength >= 0, let base = buffer.baseAddress else { return .bufferTooSmall }
        let padded = paddedLength(payloadLength)
        let header = MessageLayout.Transport.headerSize
        guard header + padded + AEAD.tagSize <= buffer.count else { return .bufferTooSmall }
        guard let peer = peer(handle) else { return .unknownPeer }
        var refused = false
        let reserved = peer.state.withLock { st -> (Keypair, UInt64, Endpoint?)? in
            if st.refused {
                refused = true
                return nil
            }
            guard let keypair = st.current, !keypair.isExpired(now) else {
                st.timers.wantInitiation = true
                return nil
            }
            let counter = keypair.sendCounter.wrappingAdd(1, ordering: .relaxed).oldValue
            guard counter < WireGuardProtocol.rejectAfterMessages else {
                keypair.sendCounter.store(WireGuardProtocol.rejectAfterMessages, ordering: .relaxed)
                st.timers.wantInitiation = true
                return nil
            }
            if payloadLength > 0 && st.timers.newHandshake == nil {
                st.timers.dataSent(now: now, jitter: jitter())
            }
            st.timers.anyAuthenticatedPacketTraversal(now: now, persistentInterval: st.persistentKeepalive)
            st.timers.anyAuthenticatedPacketSent(now: now)
            // keepKeyFreshSending
            if counter > WireGuardProtocol.rekeyAfterMessages
                || (keypair.isInitiator && now &- keypair.created > WireGuardProtocol.rekeyAfterTime)
            {
                st.timers.wantInitiation = true
            }
            return (keypair, counter, st.endpoint)
        }
        guard let (keypair, counter, endpoint) = reserved else { return refused ? .refused : .handshakeNeeded }
        let plaintext = base + header
        if padded > payloadLength { (plaintext + payloadLength).initializeMemory(as: UInt8.self, repeating: 0, count: padded - payloadLength) }
        MessageLayout.writeLE32(base, 0, MessageType.transport.rawValue)
        MessageLayout.writeLE32(base, MessageLayout.Transport.receiver, keypair.remoteIndex)
        MessageLayout.writeLE64(base, MessageLayout.Transport.counter, counter)
        AEAD.seal(key: keypair.sendKey, counter: counter, data: plaintext, length: padded, ad: nil, adLength: 0)
        let total = header + padded + AEAD.tagSize
        peer.txBytes.add(UInt64(total), ordering: .relaxed)
        peer.txPackets.add(1, ordering: .relaxed)
        guard let endpoint else { return .noEndpoint(range: 0..<total) }
        return .send(range: 0..<total, to: endpoint)
    }
}
