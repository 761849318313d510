import Core
/// The little TCP state machine a flow entry keeps: enough to pick the idle timeout
/// (RFC 9293 §3.3.2 states collapsed the way conntrack's timeouts need them). It does not check
/// sequence numbers or windows: a forged RST/FIN can shorten an entry's life, never lengthen it.
public struct TCPTracker: Sendable, Equatable {
    /// Where the connection is, as far as timeouts care.
    public enum State: UInt8, Sendable {
        /// Only the originator's SYN seen.
        case synSent
        /// The responder answered SYN+ACK.
        case synReceived
        /// First packet was not a SYN (picked up mid-stream) and nothing came back yet.
        case unreplied
        /// Handshake completed, or a mid-stream flow saw traffic both ways.
        case established
        /// A FIN seen in one or both directions.
        case closing
        /// A RST seen.
        case closed
    }

    /// The current state.
    public var state: State
    /// FINs seen: bit 0 from the originator, bit 1 from the responder.
    public var finMask: UInt8

    /// The state after the first packet of a flow (sent by its originator).
    @inlinable public init(firstFlags flags: TCPFlags) {
        finMask = 0
        if flags.contains(.rst) {
            state = .closed
        } else if flags.contains(.syn) && !flags.contains(.ack) {
            state = .synSent
        } else {
            state = .unreplied
        }
        if flags.contains(.fin) && state != .closed {
            finMask = 1
            state = .closing
        }
    }

    /// Advances on a later packet; `isReply` is true when the responder sent it.
    @inlinable public mutating func update(flags: TCPFlags, isReply: Bool) {
        if flags.contains(.rst) {
            state = .closed
            return
        }
        let syn = flags.contains(.syn)
        let ack = flags.contains(.ack)
        switch state {
        case .synSent:
            if isReply && syn && ack { state = .synReceived }
        case .synReceived:
            if !isReply && ack && !syn { state = .established }
        case .unreplied:
            if isReply { state = .established }
        case .established:
            break
        case .closing, .closed:
            // A new SYN from the originator reuses the entry (port reuse after TIME_WAIT).
            if !isReply && syn && !ack {
                state = .synSent
                finMask = 0
                return
            }
        }
        if flags.contains(.fin) && state != .closed {
            finMask |= isReply ? 2 : 1
            state = .closing
        }
    }
}
