// What the caller must do with a received datagram.
import Core

/// The outcome of `WireGuardDevice.receive`. Ranges index the buffer named in each case.
public enum ReceiveResult: Equatable, Sendable {
    /// A handshake response to `peer` is in the *output* buffer at `range`; send it to the datagram's
    /// source (which is now the peer's endpoint).
    case sendResponse(peer: PeerHandle, range: Range<Int>)
    /// A cookie reply is in the *output* buffer at `range`; send it to the datagram's source.
    /// Nothing else changed (we were under load and the message had no valid mac2).
    case sendCookieReply(range: Range<Int>)
    /// We were the initiator and the handshake completed: encrypt and send the packets queued for
    /// `peer`, or a keepalive (`encrypt` with an empty payload) when none are queued.
    case handshakeComplete(peer: PeerHandle)
    /// A decrypted IP packet from `peer` is in the *input* buffer at `range` (padding removed, length
    /// taken from the IP header). `sessionConfirmed` is true when this packet confirmed a session we
    /// answered: packets queued for the peer can now be sent.
    case data(peer: PeerHandle, range: Range<Int>, sessionConfirmed: Bool)
    /// An authenticated keepalive (empty transport message) from `peer`.
    case keepalive(peer: PeerHandle, sessionConfirmed: Bool)
    /// A valid cookie reply from `peer` was stored; the next handshake message carries mac2.
    case cookieStored(peer: PeerHandle)
    /// An authenticated initiation, not answered yet (`receive(..., deferInitiations: true)`):
    /// answer it with `respond(to:now:output:)`, or drop it to refuse it.
    case initiation(InitiationToken)
    /// `peer` sent a valid initiation but the gateway refuses it (`setRefused`); nothing was answered
    /// and no state changed.
    case refused(peer: PeerHandle)
    /// The datagram was dropped and counted; no state changed.
    case drop(DropReason)
}
