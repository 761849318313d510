// Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s with WireGuard's construction (whitepaper §5.4).
import Core

/// The handshake computations, as pure functions of keys, indices and timestamp. The device calls
/// them with its own state; the known-answer test calls them with fixed keys. Message bytes come
/// back with zero mac1/mac2, which `MACs` fills in.
public enum Noise {
    /// `C_i = HASH(CONSTRUCTION)`.
    public static let initialChainKey = Blake2s.hash(WireGuardProtocol.construction)
    /// `H_i = HASH(C_i ‖ IDENTIFIER)`.
    public static let initialHash = Blake2s.hash(initialChainKey, WireGuardProtocol.identifier)

    /// Chaining key and hash carried between handshake steps.
    public struct SymmetricState: Sendable {
        /// The Noise chaining key `C`.
        public var chainKey: [UInt8]
        /// The Noise handshake hash `H`.
        public var hash: [UInt8]

        /// Zeroes both (best effort; called when the state is discarded).
        mutating func wipe() {
            Sodium.zero(&chainKey)
            Sodium.zero(&hash)
        }
    }

    /// What the responder learns from a valid initiation.
    public struct ConsumedInitiation: Sendable {
        /// The initiator's index (the receiver index of our response).
        public var senderIndex: UInt32
        /// The initiator's ephemeral public key.
        public var remoteEphemeral: [UInt8]
        /// The initiator's static public key (its identity).
        public var remoteStatic: PublicKey
        /// The decrypted TAI64N timestamp (replay check).
        public var timestamp: TAI64N
        /// Chaining key and hash to continue with.
        public var state: SymmetricState
    }

    /// What the initiator learns from a valid response.
    public struct ConsumedResponse: Sendable {
        /// The responder's index (the receiver index of our transport messages).
        public var senderIndex: UInt32
        /// Our index, echoed back.
        public var receiverIndex: UInt32
        /// Final chaining key and hash (transport keys derive from the chaining key).
        public var state: SymmetricState
    }

    static func mixHash(_ h: inout [UInt8], _ data: [UInt8]) { h = Blake2s.hash(h, data) }

    /// Builds an initiation (148 bytes, macs zero) from the initiator's side.
    /// `staticStatic` is `DH(S_i_priv, S_r_pub)`, precomputed per peer.
    public static func createInitiation(senderIndex: UInt32, localStaticPublic: [UInt8],
                                        remoteStaticPublic: [UInt8], staticStatic: [UInt8],
                                        ephemeralPrivate: [UInt8], timestamp: TAI64N)
        -> (message: [UInt8], state: SymmetricState)?
    {
        var msg = [UInt8](repeating: 0, count: MessageLayout.Initiation.size)
        msg[0] = UInt8(MessageType.initiation.rawValue)
        msg.setLE32(MessageLayout.Initiation.sender, senderIndex)
        var c = initialChainKey
        var h = Blake2s.hash(initialHash, remoteStaticPublic)
        let ephemeralPublic = X25519.publicKey(of: ephemeralPrivate)
        c = Blake2s.kdf(1, key: c, input: ephemeralPublic)[0]
        msg.replaceSubrange(8..<40, with: ephemeralPublic)
        mixHash(&h, ephemeralPublic)
        guard var es = X25519.sharedSecret(ephemeralPrivate, remoteStaticPublic) else { return nil }
        var kdf = Blake2s.kdf(2, key: c, input: es)
        Sodium.zero(&es)
        c = kdf[0]
        let encStatic = AEAD.seal(key: kdf[1], counter: 0, plaintext: localStaticPublic, ad: h)
        Sodium.zero(&kdf[1])
        msg.replaceSubrange(40..<88, with: encStatic)
        mixHash(&h, encStatic)
        kdf = Blake2s.kdf(2, key: c, input: staticStatic)
        c = kdf[0]
        let encTime = AEAD.seal(key: kdf[1], counter: 0, plaintext: timestamp.bytes, ad: h)
        Sodium.zero(&kdf[1])
        msg.replaceSubrange(88..<116, with: encTime)
        mixHash(&h, encTime)
        return (msg, SymmetricState(chainKey: c, hash: h))
    }

    /// Verifies and decrypts an initiation (exactly 148 bytes, mac1 already checked) on the
    /// responder. `staticStatic` returns `DH(S_r_priv, S_i_pub)` for a configured peer, nil otherwise.
    public static func consumeInitiation(_ msg: [UInt8], localStaticPrivate: [UInt8], localStaticPublic: [UInt8],
                                         staticStatic: (PublicKey) -> [UInt8]?)
        -> Result<ConsumedInitiation, DropReason>
    {
        precondition(msg.count == MessageLayout.Initiation.size)
        let ephemeral = Array(msg[8..<40])
        var h = Blake2s.hash(initialHash, localStaticPublic)
        mixHash(&h, ephemeral)
        var c = Blake2s.kdf(1, key: initialChainKey, input: ephemeral)[0]
        guard var es = X25519.sharedSecret(localStaticPrivate, ephemeral) else { return .failure(.invalidPublicKey) }
        var kdf = Blake2s.kdf(2, key: c, input: es)
        Sodium.zero(&es)
        c = kdf[0]
        let encStatic = Array(msg[40..<88])
        guard let staticBytes = AEAD.open(key: kdf[1], counter: 0, ciphertext: encStatic, ad: h),
            let remoteStatic = PublicKey(staticBytes)
        else { return .failure(.handshakeDecryptFailed) }
        Sodium.zero(&kdf[1])
        mixHash(&h, encStatic)
        guard var ss = staticStatic(remoteStatic) else { return .failure(.unknownPeer) }
        kdf = Blake2s.kdf(2, key: c, input: ss)
        Sodium.zero(&ss)
        c = kdf[0]
        let encTime = Array(msg[88..<116])
        guard let time = AEAD.open(key: kdf[1], counter: 0, ciphertext: encTime, ad: h) else {
            return .failure(.handshakeDecryptFailed)
        }
        Sodium.zero(&kdf[1])
        mixHash(&h, encTime)
        return .success(ConsumedInitiation(
            senderIndex: msg.le32(MessageLayout.Initiation.sender), remoteEphemeral: ephemeral,
            remoteStatic: remoteStatic, timestamp: TAI64N(raw: time)!, state: SymmetricState(chainKey: c, hash: h)))
    }

    /// Builds a response (92 bytes, macs zero) on the responder, continuing from the consumed initiation.
    /// `presharedKey` is 32 bytes (all zeros when the peer has none).
    public static func createResponse(senderIndex: UInt32, receiverIndex: UInt32, remoteEphemeral: [UInt8],
                                      remoteStatic: [UInt8], presharedKey: [UInt8], ephemeralPrivate: [UInt8],
                                      state: SymmetricState) -> (message: [UInt8], state: SymmetricState)?
    {
        var msg = [UInt8](repeating: 0, count: MessageLayout.Response.size)
        msg[0] = UInt8(MessageType.response.rawValue)
        msg.setLE32(MessageLayout.Response.sender, senderIndex)
        msg.setLE32(MessageLayout.Response.receiver, receiverIndex)
        var c = state.chainKey
        var h = state.hash
        let ephemeralPublic = X25519.publicKey(of: ephemeralPrivate)
        msg.replaceSubrange(12..<44, with: ephemeralPublic)
        c = Blake2s.kdf(1, key: c, input: ephemeralPublic)[0]
        mixHash(&h, ephemeralPublic)
        guard var ee = X25519.sharedSecret(ephemeralPrivate, remoteEphemeral) else { return nil }
        c = Blake2s.kdf(1, key: c, input: ee)[0]
        Sodium.zero(&ee)
        guard var se = X25519.sharedSecret(ephemeralPrivate, remoteStatic) else { return nil }
        c = Blake2s.kdf(1, key: c, input: se)[0]
        Sodium.zero(&se)
        var kdf = Blake2s.kdf(3, key: c, input: presharedKey)
        c = kdf[0]
        mixHash(&h, kdf[1])
        let empty = AEAD.seal(key: kdf[2], counter: 0, plaintext: [], ad: h)
        Sodium.zero(&kdf[1])
        Sodium.zero(&kdf[2])
        msg.replaceSubrange(44..<60, with: empty)
        mixHash(&h, empty)
        return (msg, SymmetricState(chainKey: c, hash: h))
    }

    /// Verifies a response (exactly 92 bytes, mac1 already checked) on the initiator, continuing from
    /// the state `createInitiation` returned.
    public static func consumeResponse(_ msg: [UInt8], localEphemeralPrivate: [UInt8], localStaticPrivate: [UInt8],
                                       presharedKey: [UInt8], state: SymmetricState)
        -> Result<ConsumedResponse, DropReason>
    {
        precondition(msg.count == MessageLayout.Response.size)
        let ephemeral = Array(msg[12..<44])
        var c = Blake2s.kdf(1, key: state.chainKey, input: ephemeral)[0]
        var h = state.hash
        mixHash(&h, ephemeral)
        guard var ee = X25519.sharedSecret(localEphemeralPrivate, ephemeral) else { return .failure(.invalidPublicKey) }
        c = Blake2s.kdf(1, key: c, input: ee)[0]
        Sodium.zero(&ee)
        guard var se = X25519.sharedSecret(localStaticPrivate, ephemeral) else { return .failure(.invalidPublicKey) }
        c = Blake2s.kdf(1, key: c, input: se)[0]
        Sodium.zero(&se)
        var kdf = Blake2s.kdf(3, key: c, input: presharedKey)
        c = kdf[0]
        mixHash(&h, kdf[1])
        let empty = Array(msg[44..<60])
        guard AEAD.open(key: kdf[2], counter: 0, ciphertext: empty, ad: h) != nil else {
            return .failure(.handshakeDecryptFailed)
        }
        Sodium.zero(&kdf[1])
        Sodium.zero(&kdf[2])
        mixHash(&h, empty)
        return .success(ConsumedResponse(
            senderIndex: msg.le32(MessageLayout.Response.sender),
            receiverIndex: msg.le32(MessageLayout.Response.receiver), state: SymmetricState(chainKey: c, hash: h)))
    }

    /// Transport keys from the final chaining key: `(T_send, T_recv)` for the initiator is
    /// `KDF2(C, ε)`; the responder swaps them (whitepaper §5.4.5).
    public static func transportKeys(chainKey: [UInt8], initiator: Bool) -> (send: [UInt8], receive: [UInt8]) {
        let k = Blake2s.kdf(2, key: chainKey, input: [])
        return initiator ? (k[0], k[1]) : (k[1], k[0])
    }
}
