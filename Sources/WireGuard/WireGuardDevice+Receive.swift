// The receive path: one datagram in, one decision out.
//
// Transport messages (the hot path) are looked up by receiver index, checked against the keypair's
// age, decrypted in place without any lock held, then committed: the replay window accepts the
// counter (after the tag verified, as the kernel and wireguard-go do), a responder's `next` keypair is promoted on first use, timers and
// endpoint are updated. Handshake messages are copied out (they are rare and small), mac1 is always
// checked, mac2 and the per-source rate limit only under load, and state is changed only after
// every check passed.
import Core
import Synchronization

extension WireGuardDevice {
    /// Processes one datagram of `length` bytes at the start of `buffer` that came from `source`.
    ///
    /// - `buffer`: caller-owned; transport payloads are decrypted in place (a failed tag zeroes it).
    /// - `output`: caller-owned, ≥ 92 bytes; handshake responses and cookie replies are written here.
    /// - `now`: monotonic nanoseconds. `underLoad`: the caller's judgement that handshake processing
    ///   is saturated (wireguard-go: handshake queue more than 1/8 full); enables cookies and rate limit.
    /// - `deferInitiations`: false (clients, tests): an authenticated initiation is answered at once
    ///   unless the peer is refused (`setRefused`). True (the gateway): it is returned as
    ///   `.initiation(token)` — authenticated (mac1, a known peer's static key, a fresh timestamp,
    ///   not a flood), nothing built, nothing changed — and the caller decides, then calls
    ///   ``respond(to:now:output:)`` or drops the token (the peer may retry).
    public func receive(_ buffer: UnsafeMutableRawBufferPointer, length: Int, from source: Endpoint, now: UInt64,
                        underLoad: Bool, output: UnsafeMutableRawBufferPointer, deferInitiations: Bool = false) -> ReceiveResult
    {
        guard length >= 4, length <= buffer.count, let base = buffer.baseAddress else { return count(.badLength) }
        switch MessageLayout.readLE32(base, 0) {
        case MessageType.transport.rawValue:
            return receiveTransport(base, length: length, source: source, now: now)
        case MessageType.initiation.rawValue:
            guard length == MessageLayout.Initiation.size else { return count(.badLength) }
            guard output.count >= MessageLayout.Response.size else { return count(.outputTooSmall) }
            let msg = Array(UnsafeRawBufferPointer(rebasing: buffer[0..<length]))
            let checked = authenticateInitiation(msg, source: source, now: now, underLoad: underLoad, output: output)
            guard case .initiation(let token) = checked, !deferInitiations else { return checked }
            guard !token.refused else { return .refused(peer: token.peer.handle) }
            return respond(to: token, now: now, output: output)
        case MessageType.response.rawValue:
            guard length == MessageLayout.Response.size else { return count(.badLength) }
            guard output.count >= MessageLayout.CookieReply.size else { return count(.outputTooSmall) }
            let msg = Array(UnsafeRawBufferPointer(rebasing: buffer[0..<length]))
            return receiveResponse(msg, source: source, now: now, underLoad: underLoad, output: output)
        case MessageType.cookieReply.rawValue:
            guard length == MessageLayout.CookieReply.size else { return count(.badLength) }
            let msg = Array(UnsafeRawBufferPointer(rebasing: buffer[0..<length]))
            return receiveCookieReply(msg, now: now)
        default:
            return count(.unknownType)
        }
    }

    /// mac1 always; under load mac2 (else a cookie reply) and the per-source rate limit.
    /// Returns nil to continue, or the result to return.
    private func admitHandshake(_ msg: [UInt8], source: Endpoint, now: UInt64, underLoad: Bool,
                                output: UnsafeMutableRawBufferPointer) -> ReceiveResult?
    {
        guard MACs.checkMAC1(msg, key: mac1Key) else { return count(.badMAC1) }
        guard underLoad else { return nil }
        let reply: [UInt8]? = checker.withLock { c in
            if c.checkMAC2(msg, source: source, now: now) { return nil }
            return c.makeReply(to: msg, senderIndex: msg.le32(4), source: source, now: now, random: random)
        }
        if let reply {
            reply.withUnsafeBytes { output.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            return .sendCookieReply(range: 0..<reply.count)
        }
        guard limiter.withLock({ $0.allow(source.address, now: now) }) else { return count(.rateLimited) }
        return nil
    }

    private enum InitiationCheck {
        case replay, flood
        case ok(refused: Bool)
    }

    /// Checks an initiation up to its static key and timestamp; `.initiation(token)` when it is
    /// authentic and fresh. Changes nothing (the timestamp is consumed by `respond`).
    private func authenticateInitiation(_ msg: [UInt8], source: Endpoint, now: UInt64, underLoad: Bool,
                                        output: UnsafeMutableRawBufferPointer) -> ReceiveResult
    {
        if let early = admitHandshake(msg, source: source, now: now, underLoad: underLoad, output: output) {
            return early
        }
        var found: Peer?
        let consumed = Noise.consumeInitiation(
            msg, localStaticPrivate: privateKey.read(0, 32), localStaticPublic: publicKey.bytes
        ) { key in
            guard let peer = peers.withLock({ t in t.byKey[key].flatMap { t.byHandle[$0] } }) else { return nil }
            found = peer
            return peer.state.withLock { $0.staticStatic.isZero ? nil : $0.staticStatic.read(0, 32) }
        }
        guard case .success(var c) = consumed, let peer = found else {
            if case .failure(let reason) = consumed { return count(reason) }
            return count(.unknownPeer)
        }
        let check = peer.state.withLock { st -> InitiationCheck in
            if !(c.timestamp > st.handshake.lastTimestamp) { return .replay }
            if let last = st.handshake.lastInitiationConsumption,
                now &- last <= WireGuardProtocol.handshakeInitiationRate
            {
                return .flood
            }
            return .ok(refused: st.refused)
        }
        switch check {
        case .replay:
            c.state.wipe()
            return count(.replayedTimestamp)
        case .flood:
            c.state.wipe()
            return count(.initiationFlood)
        case .ok(let refused):
            return .initiation(InitiationToken(peer: peer, consumed: c, source: source, length: msg.count, refused: refused))
        }
    }

    /// Answers an authenticated initiation (from `receive(..., deferInitiations: true)`): builds
    /// the response and the responder's keypair into `output` (≥ 92 bytes) — `.sendResponse` — or
    /// drops it when the peer is refused (`setRefused`: `.refused`), was removed, or a newer
    /// initiation was answered meanwhile. A token is answered at most once.
    public func respond(to token: InitiationToken, now: UInt64, output: UnsafeMutableRawBufferPointer) -> ReceiveResult {
        guard output.count >= MessageLayout.Response.size else { return count(.outputTooSmall) }
        guard let c = token.take() else { return count(.replayedTimestamp) }
        var state0 = c.state
        defer { state0.wipe() }
        let peer = token.peer, source = token.source
        guard var psk = peer.state.withLock({ st -> [UInt8]? in st.refused ? nil : st.presharedKey.read(0, 32) }) else {
            return .refused(peer: peer.handle)
        }
        // Build the response and the session outside the peer's lock (three X25519 operations).
        var ephemeral = X25519.generatePrivateKey(random)
        defer {
            Sodium.zero(&ephemeral)
            Sodium.zero(&psk)
        }
        let localIndex = indices.withLock { $0.allocate(for: peer, random: random) }
        guard let built = Noise.createResponse(
            senderIndex: localIndex, receiverIndex: c.senderIndex, remoteEphemeral: c.remoteEphemeral,
            remoteStatic: c.remoteStatic.bytes, presharedKey: psk, ephemeralPrivate: ephemeral, state: state0)
        else {
            indices.withLock { $0.remove(localIndex) }
            return count(.invalidPublicKey)
        }
        var state = built.state
        defer { state.wipe() }
        var keys = Noise.transportKeys(chainKey: state.chainKey, initiator: false)
        let keypair = Keypair(send: keys.send, receive: keys.receive, created: now, isInitiator: false,
                              localIndex: localIndex, remoteIndex: c.senderIndex)
        Sodium.zero(&keys.send)
        Sodium.zero(&keys.receive)
        let response: [UInt8]? = peer.state.withLock { st in
            // Re-check under the lock: another thread may have accepted a newer initiation meanwhile.
            guard c.timestamp > st.handshake.lastTimestamp, !st.refused, !st.removed else { return nil }
            st.handshake.lastTimestamp = c.timestamp
            st.handshake.lastInitiationConsumption = now
            let pending = st.handshake.initiationSent ? st.handshake.localIndex : nil
            st.handshake.clearPending()
            let oldNext = st.next
            let oldPrevious = st.previous
            indices.withLock { idx in
                if let pending { idx.remove(pending) }
                if let oldNext { idx.remove(oldNext.localIndex) }
                if let oldPrevious { idx.remove(oldPrevious.localIndex) }
                idx.install(keypair, peer: peer)
            }
            st.next = keypair
            st.previous = nil
            st.endpoint = source
            var out = built.message
            addMACsLocked(&out, &st, peer: peer, now: now)
            st.timers.anyAuthenticatedPacketTraversal(now: now, persistentInterval: st.persistentKeepalive)
            st.timers.anyAuthenticatedPacketReceived()
            st.timers.sessionDerived(now: now)
            st.timers.anyAuthenticatedPacketSent(now: now)
            return out
        }
        guard let response else {
            indices.withLock { $0.remove(localIndex) }
            return count(.replayedTimestamp)
        }
        peer.rxBytes.add(UInt64(token.length), ordering: .relaxed)
        peer.txBytes.add(UInt64(response.count), ordering: .relaxed)
        response.withUnsafeBytes { output.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        return .sendResponse(peer: peer.handle, range: 0..<response.count)
    }

    private func receiveResponse(_ msg: [UInt8], source: Endpoint, now: UInt64, underLoad: Bool,
                                 output: UnsafeMutableRawBufferPointer) -> ReceiveResult
    {
        if let early = admitHandshake(msg, source: source, now: now, underLoad: underLoad, output: output) {
            return early
        }
        let receiver = msg.le32(MessageLayout.Response.receiver)
        guard let entry = indices.withLock({ $0.lookup(receiver) }) else { return count(.unknownReceiverIndex) }
        guard entry.keypair == nil else { return count(.unexpectedResponse) }
        let peer = entry.peer
        let privateKey = self.privateKey.read(0, 32)
        let outcome: Result<Void, DropReason>? = peer.state.withLock { st in
            guard st.handshake.initiationSent, st.handshake.localIndex == receiver, !st.removed,
                  let secrets = st.handshake.secrets
            else {
                return .failure(.unexpectedResponse)
            }
            if st.refused { return nil }
            let consumed = Noise.consumeResponse(
                msg, localEphemeralPrivate: secrets.read(64, 32), localStaticPrivate: privateKey,
                presharedKey: st.presharedKey.read(0, 32),
                state: Noise.SymmetricState(chainKey: secrets.read(0, 32), hash: secrets.read(32, 32)))
            guard case .success(var r) = consumed else {
                if case .failure(let reason) = consumed { return .failure(reason) }
                return .failure(.handshakeDecryptFailed)
            }
            var keys = Noise.transportKeys(chainKey: r.state.chainKey, initiator: true)
            r.state.wipe()
            let keypair = Keypair(send: keys.send, receive: keys.receive, created: now, isInitiator: true,
                                  localIndex: receiver, remoteIndex: r.senderIndex)
            Sodium.zero(&keys.send)
            Sodium.zero(&keys.receive)
            // Initiator rotation (wireguard-go BeginSymmetricSession): the new keypair is current at once.
            let oldPrevious = st.previous
            let oldCurrent = st.current
            let oldNext = st.next
            indices.withLock { idx in
                if let oldPrevious { idx.remove(oldPrevious.localIndex) }
                if oldNext != nil, let oldCurrent { idx.remove(oldCurrent.localIndex) }
                idx.install(keypair, peer: peer)
            }
            st.previous = oldNext ?? oldCurrent
            st.next = nil
            st.current = keypair
            st.handshake.initiationSent = false
            st.handshake.localIndex = 0
            secrets.clear()
            st.endpoint = source
            st.lastHandshake = now
            st.timers.anyAuthenticatedPacketTraversal(now: now, persistentInterval: st.persistentKeepalive)
            st.timers.anyAuthenticatedPacketReceived()
            st.timers.sessionDerived(now: now)
            st.timers.handshakeComplete()
            return .success(())
        }
        switch outcome {
        case nil: return .refused(peer: peer.handle)
        case .failure(let reason): return count(reason)
        case .success:
            peer.rxBytes.add(UInt64(msg.count), ordering: .relaxed)
            return .handshakeComplete(peer: peer.handle)
        }
    }

    private func receiveCookieReply(_ msg: [UInt8], now: UInt64) -> ReceiveResult {
        let receiver = msg.le32(MessageLayout.CookieReply.receiver)
        guard let entry = indices.withLock({ $0.lookup(receiver) }) else { return count(.unknownReceiverIndex) }
        let ok = entry.peer.state.withLock { st -> Bool in
            guard let lastMAC1 = st.lastMAC1,
                let cookie = AEAD.xopen(key: MACs.cookieKey(entry.peer.publicKey.bytes), nonce: Array(msg[8..<32]), ciphertext: Array(msg[32..<64]),
                                        ad: lastMAC1)
            else { return false }
            st.cookie = cookie
            st.cookieSetAt = now
            return true
        }
        return ok ? .cookieStored(peer: entry.peer.handle) : count(.invalidCookieReply)
    }

    private func receiveTransport(_ base: UnsafeMutableRawPointer, length: Int, source: Endpoint,
                                  now: UInt64) -> ReceiveResult
    {
        guard length >= MessageLayout.Transport.minimumSize else { return count(.badLength) }
        let index = MessageLayout.readLE32(base, MessageLayout.Transport.receiver)
        let counter = MessageLayout.readLE64(base, MessageLayout.Transport.counter)
        guard let entry = indices.withLock({ $0.lookup(index) }), let keypair = entry.keypair else {
            return count(.unknownReceiverIndex)
        }
        let limit = WireGuardProtocol.rejectAfterMessages
        guard !keypair.isExpired(now), counter < limit else { return count(.expiredKeypair) }
        let header = MessageLayout.Transport.headerSize
        guard AEAD.open(key: keypair.receiveKey, counter: counter, data: base + header, length: length - header,
                        ad: nil, adLength: 0)
        else { return count(.badTag) }
        guard keypair.replay.withLock({ $0.accept(counter, limit: limit) }) else { return count(.replayedCounter) }
        let peer = entry.peer
        let plainLength = length - header - AEAD.tagSize
        let confirmed = peer.state.withLock { st -> Bool in
            var confirmed = false
            if let next = st.next, next === keypair {
                let oldPrevious = st.previous
                if let oldPrevious { indices.withLock { $0.remove(oldPrevious.localIndex) } }
                st.previous = st.current
                st.current = next
                st.next = nil
                st.lastHandshake = now
                st.timers.handshakeComplete()
                confirmed = true
            }
            st.endpoint = source
            st.timers.anyAuthenticatedPacketTraversal(now: now, persistentInterval: st.persistentKeepalive)
            st.timers.anyAuthenticatedPacketReceived()
            if plainLength > 0 { st.timers.dataReceived(now: now) }
            // keepKeyFreshReceiving: an initiator whose session is about to expire rekeys now.
            if !st.timers.sentLastMinuteHandshake, let current = st.current, current.isInitiator,
                now &- current.created > WireGuardProtocol.rejectAfterTime - WireGuardProtocol.keepaliveTimeout
                    - WireGuardProtocol.rekeyTimeout
            {
                st.timers.sentLastMinuteHandshake = true
                st.timers.wantInitiation = true
            }
            return confirmed
        }
        peer.rxBytes.add(UInt64(length), ordering: .relaxed)
        peer.rxPackets.add(1, ordering: .relaxed)
        if plainLength == 0 { return .keepalive(peer: peer.handle, sessionConfirmed: confirmed) }
        let packet = base + header
        let ipLength: Int
        switch packet.load(as: UInt8.self) >> 4 {
        case 4 where plainLength >= 20:
            ipLength = Int(packet.load(fromByteOffset: 2, as: UInt8.self)) << 8
                | Int(packet.load(fromByteOffset: 3, as: UInt8.self))
            guard ipLength >= 20, ipLength <= plainLength else { return count(.invalidInnerPacket) }
        case 6 where plainLength >= 40:
            ipLength = 40 + (Int(packet.load(fromByteOffset: 4, as: UInt8.self)) << 8
                | Int(packet.load(fromByteOffset: 5, as: UInt8.self)))
            guard ipLength <= plainLength else { return count(.invalidInnerPacket) }
        default:
            return count(.invalidInnerPacket)
        }
        return .data(peer: peer.handle, range: header..<(header + ipLength), sessionConfirmed: confirmed)
    }
}
