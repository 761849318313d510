// Timer expiry: the I/O shell calls tick(now:) every 100–250 ms and performs the actions.
import Core
import Synchronization

extension WireGuardDevice {
    /// Fires every timer due at `now` (monotonic nanoseconds) and returns what to do, in peer order.
    /// Expiry behaviour follows wireguard-go `device/timers.go` (`expiredRetransmitHandshake`,
    /// `expiredSendKeepalive`, `expiredNewHandshake`, `expiredZeroKeyMaterial`,
    /// `expiredPersistentKeepalive`), plus the rekey requests the data path recorded.
    public func tick(now: UInt64) -> [TimerAction] {
        let all = peers.withLock { $0.byHandle.values.sorted { $0.handle < $1.handle } }
        var actions: [TimerAction] = []
        for peer in all {
            peer.state.withLock { st in
                let h = peer.handle
                var initiate: Bool? = nil  // nil: none; value: retry flag
                var keepalive = false
                if let due = st.timers.retransmitHandshake, now >= due {
                    st.timers.retransmitHandshake = nil
                    if st.timers.handshakeAttempts > WireGuardProtocol.maxTimerHandshakes {
                        st.timers.sendKeepalive = nil
                        actions.append(.handshakeGaveUp(peer: h))
                        if st.timers.zeroKeyMaterial == nil {
                            st.timers.zeroKeyMaterial = now + 3 * WireGuardProtocol.rejectAfterTime
                        }
                        st.timers.wantInitiation = false
                    } else {
                        st.timers.handshakeAttempts += 1
                        initiate = true
                    }
                }
                if let due = st.timers.sendKeepalive, now >= due {
                    st.timers.sendKeepalive = nil
                    keepalive = true
                    if st.timers.needAnotherKeepalive {
                        st.timers.needAnotherKeepalive = false
                        st.timers.rearmKeepaliveOnSend = true
                    }
                }
                if let due = st.timers.newHandshake, now >= due {
                    st.timers.newHandshake = nil
                    if initiate == nil { initiate = false }
                }
                if let due = st.timers.zeroKeyMaterial, now >= due {
                    st.timers.zeroKeyMaterial = nil
                    eraseKeysLocked(&st)
                    actions.append(.keysZeroed(peer: h))
                }
                if let due = st.timers.persistentKeepalive, now >= due {
                    st.timers.persistentKeepalive = nil
                    if st.persistentKeepalive > 0 { keepalive = true }
                }
                if st.timers.wantInitiation {
                    st.timers.wantInitiation = false
                    if initiate == nil { initiate = false }
                }
                if let retry = initiate { actions.append(.sendInitiation(peer: h, retry: retry)) }
                if keepalive { actions.append(.sendKeepalive(peer: h)) }
            }
        }
        return actions
    }
}
