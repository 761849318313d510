// Flow decisions under the flow lock: track, evaluate (host rules included), report once.
import SystemIO
import Core
import Glibc
import Packet
import Policy
import Runtime
import WireGuard

extension GatewayEngine {
    /// Tracks the packet's flow and returns its verdict: the cached one when it carries the
    /// current generation, otherwise a fresh evaluation (stamped and counted).
    /// `fromPeer`: the packet came out of the tunnel (its sender is the peer). The observer (live
    /// ring, capture) sees every tracked packet here with its verdict.
    ///
    /// An ICMP error about a flow we track (fragmentation needed, port unreachable, …) takes that
    /// flow's verdict, so return traffic of an allowed flow passes even under `default in block`.
    @inline(__always)
    func decide(_ s: FlowState, _ p: ParsedPacket, _ packet: UnsafeRawBufferPointer, peer: UInt32, fromPeer: Bool,
                policy: ActivePolicy, watcher: (any PacketObserving)?, minute: Int, nowMs: Int64) -> Verdict
    {
        let table = s.table
        let observer = watcher  // the batch's observer, nil when nothing watches
        if p.isICMPError, p.payloadOffset < packet.count,
            let quoted = try? PacketParser.parseQuoted(UnsafeRawBufferPointer(rebasing: packet[p.payloadOffset...]))
        {
            let (handle, ended) = table.lookup(quoted.flowKey.key, now: nowMs)
            if let ended { reportEnded(ended, observer) }  // the lookup found the quoted flow expired: it ends here
            if let handle, table[handle].verdictGeneration == policy.generation,
                let cached = Verdict(rawValue: table[handle].verdictAction)
            {
                return cached
            }
        }
        let (key, reversed) = p.flowKey
        // A new flow over the peer's caps (or into a table full of other peers' flows) is
        // refused: counted there; `.pending` tells the loop the packet is consumed.
        guard let t = trackOwned(s, key, reversed: reversed, length: packet.count, tcpFlags: p.tcpFlags,
                                 nowMs: nowMs, peer: peer) else {
            if let ended = table.lastRefusedEnded { reportEnded(ended, observer) }
            return .pending
        }
        if let ended = t.ended { reportEnded(ended, observer) }
        let entry = table[t.handle]
        if entry.verdictGeneration == policy.generation, let cached = Verdict(rawValue: entry.verdictAction) {
            if cached == .pending {
                return pendingPacket(s, t.handle, p, packet, peer: peer, fromPeer: fromPeer, isReply: t.isReply,
                                     policy: policy, watcher: observer, nowMs: nowMs)
            }
            observer?.packet(ObservedBytes(packet), p, handle: t.handle, entry: entry, opened: t.opened,
                             action: cached, peer: peer, fromPeer: fromPeer)
            return cached
        }
        // The flow's originator sent its first packet; a reply's sender is the other side.
        let originIsPeer = t.isReply ? !fromPeer : fromPeer
        var q = PolicyQuery(
            direction: originIsPeer ? .out : .in, proto: p.proto,
            source: t.isReply ? p.destination : p.source, destination: t.isReply ? p.source : p.destination,
            sourcePort: t.isReply ? p.destinationPort : p.sourcePort,
            destinationPort: t.isReply ? p.sourcePort : p.destinationPort,
            peer: policy.peerID(peer), tier: policy.tier(peer), host: nil, minuteOfWeek: minute)
        var v = policy.compiled.evaluate(q)
        var host: String?
        if policy.compiled.hasHostRules {
            // Host rules (docs/policy.md): the name from the flow's first payload, else the DNS
            // names its peer looked up for the destination. A flow whose action could change
            // with a name not yet read waits (pending); any other is decided now, without a
            // host (same action for every name: recorded by the rule a host-less flow matches).
            let slot = t.handle.index
            s.hostGate.prepare()
            s.hostGate.claim(slot, id: entry.id)
            if s.hostGate.isPending(slot) {
                // A new policy generation while the flow waits: it keeps waiting, under it.
                s.hostGate.updateQuery(slot, q)
                table.setVerdict(t.handle, generation: policy.generation, action: Verdict.pending.rawValue, ruleIndex: -1)
                return pendingPacket(s, t.handle, p, packet, peer: peer, fromPeer: fromPeer, isReply: t.isReply,
                                     policy: policy, watcher: observer, nowMs: nowMs)
            }
            if let (name, source) = s.hostGate.host(slot), source != .dns {
                q.host = name
                v = policy.compiled.evaluate(q)
                host = name
            } else if policy.compiled.verdictDependsOnHost(q, v) {
                let learnable = originIsPeer && !s.hostGate.isDone(slot)
                    && (p.proto == .tcp || (p.proto == .udp && q.destinationPort == 443))
                if learnable && s.hostGate.begin(t.handle, id: entry.id, peer: peer, query: q, quic: p.proto == .udp,
                                               opened: t.opened, nowMs: nowMs)
                {
                    table.setVerdict(t.handle, generation: policy.generation, action: Verdict.pending.rawValue, ruleIndex: -1)
                    return pendingPacket(s, t.handle, p, packet, peer: peer, fromPeer: fromPeer, isReply: t.isReply,
                                         policy: policy, watcher: observer, nowMs: nowMs)
                }
                (v, host) = withoutReadHost(s, q, peer: peer, policy: policy, nowMs: nowMs)
                s.hostGate.markDone(slot, host: host, source: host == nil ? nil : .dns)
            }
        }
        table.setVerdict(t.handle, generation: policy.generation, action: v.action.rawValue, ruleIndex: v.ruleIndex)
        // The observer first: it assigns the flow's first capture location, which history records.
        if let observer {
            observer.packet(ObservedBytes(packet), p, handle: t.handle, entry: table[t.handle], opened: t.opened,
                            action: v.action, peer: peer, fromPeer: fromPeer)
        }
        report(FlowDecision(entry: table[t.handle], peer: peer, verdict: v, policy: policy, opened: t.opened, host: host))
        return v.action
    }

    /// A flow decision, reported once and always in this order: the rule's hit counter (status,
    /// metrics), history (`GatewayEvents.flowDecided`: rows, refusals), then the live ring's host
    /// note. The caller has cached the verdict in the flow and shown the packet to the observer
    /// first (it assigns the capture location history records). Flow lock held.
    @inline(__always)
    func report(_ d: FlowDecision) {
        d.policy.hit(d.verdict)
        events?.flowDecided(d)
        if let host = d.host { observer?.noteFlowHost(flowID: d.entry.id, peer: d.peer, verdict: d.verdict.action, host: host) }
    }

    /// A flow left the table (expired, evicted, ended by a refused insert): history, then the
    /// observer, each told once, with the flow's owner. Every end goes through here. Flow lock held.
    @inline(__always)
    func reportEnded(_ ended: FlowRecord, _ observer: (any PacketObserving)?) {
        events?.flowEnded(ended)
        observer?.flowEnded(ended, peer: ended.owner > 0 ? ended.owner : observedNoPeer)
    }

    /// A packet of a pending flow. Handshake packets (no payload) pass; the originator's payload
    /// is read for the host (held while more is needed); a reply with payload (the server spoke
    /// first) shows the flow names none. Once the flow is decided its held packets are released
    /// (allow: `HostGate.drain`) or dropped, and the verdict is cached. Returns `.pending` for a
    /// packet that was held (consumed, not a drop), else the verdict this packet follows.
    func pendingPacket(_ s: FlowState, _ handle: FlowHandle, _ p: ParsedPacket, _ packet: UnsafeRawBufferPointer,
                       peer: UInt32, fromPeer: Bool, isReply: Bool, policy: ActivePolicy,
                       watcher observer: (any PacketObserving)?, nowMs: Int64) -> Verdict
    {
        let table = s.table
        let slot = handle.index
        let step: HostGate.Step?
        if !isReply {
            step = s.hostGate.step(slot, p, packet)
        } else {
            step = p.payloadLength > 0 && !p.tcpFlags.contains(.rst) ? HostGate.Step.none : nil
        }
        guard let step else {
            observer?.packet(ObservedBytes(packet), p, handle: handle, entry: table[handle], opened: false,
                             action: .pending, peer: peer, fromPeer: fromPeer)
            return .allow
        }
        let record = s.hostGate.record(slot)
        var q = record.query
        q.peer = policy.peerID(record.peer)
        q.tier = policy.tier(record.peer)
        let v: PolicyVerdict
        var host: String?
        var source: HostSource?
        switch step {
        case .held:
            observer?.packet(ObservedBytes(packet), p, handle: handle, entry: table[handle], opened: false,
                             action: .pending, peer: peer, fromPeer: fromPeer)
            return .pending
        case .found(let name, let from):
            counters.host(.learned)
            q.host = name
            v = policy.compiled.evaluate(q)
            host = name
            source = from
        case .none, .overflow:
            (v, host) = withoutReadHost(s, q, peer: record.peer, policy: policy, nowMs: nowMs)
            if host != nil { source = .dns }
        case .blockUnknown:
            counters.host(.quicUnknownBlocked)
            v = PolicyVerdict(action: .block, ruleIndex: -1, direction: q.direction)
        }
        s.hostGate.finish(slot, verdict: v.action)
        settlePending(s, handle, record: record, verdict: v, host: host, source: source, policy: policy,
                      quicUnknown: { if case .blockUnknown = step { true } else { false } }())
        // A reply (the server spoke first) decided `reject`: it is answered, and the peer that
        // opened the flow, waiting on it, is reset too (the outbound loop builds that RST).
        if isReply, v.action == .reject, p.proto == .tcp { s.hostGate.rejectOpener = true }
        observer?.packet(ObservedBytes(packet), p, handle: handle, entry: table[handle], opened: false,
                         action: v.action, peer: peer, fromPeer: fromPeer)
        return v.action
    }

    /// Caches the final verdict of a flow that was pending and tells history (with its host).
    func settlePending(_ s: FlowState, _ handle: FlowHandle, record: HostGate.Record, verdict v: PolicyVerdict,
                       host: String?, source: HostSource?, policy: ActivePolicy, quicUnknown: Bool = false)
    {
        let table = s.table
        s.hostGate.markDone(handle.index, host: host, source: source)
        table.setVerdict(handle, generation: policy.generation, action: v.action.rawValue, ruleIndex: v.ruleIndex)
        report(FlowDecision(entry: table[handle], peer: record.peer, verdict: v, policy: policy, opened: record.opened, host: host,
                            quicUnknown: quicUnknown))
    }

    /// The verdict of a flow whose own payload gave no name: with the DNS names its peer looked
    /// up for the destination (any matching counts), and the first of them to show; without a
    /// host when none is known.
    func withoutReadHost(_ s: FlowState, _ q: PolicyQuery, peer: UInt32, policy: ActivePolicy, nowMs: Int64) -> (PolicyVerdict, String?) {
        var plain = q
        plain.host = nil
        guard q.direction == .out else { return (policy.compiled.evaluate(plain), nil) }
        let names = s.hostGate.dnsNames(peer: peer, address: q.destination, nowMs: nowMs)
        var it = names.makeIterator()
        guard let first = it.next() else { return (policy.compiled.evaluate(plain), nil) }
        return (policy.compiled.evaluate(plain, anyOf: names), String(decoding: first, as: UTF8.self))
    }

    /// Decides the pending flows that learned nothing within `hostPendingTimeoutMs`, without a
    /// host (their DNS names count); a rejected one with held packets gets its answer built
    /// into `control` for `peer` (returned, to encrypt after the lock). Timer thread, flow lock held.
    func expirePending(_ s: FlowState, nowMs: Int64, control: PacketBatch,
                       rejects: inout [(peer: PeerHandle, slot: Int, length: Int)])
    {
        let table = s.table
        let policy = self.policy
        s.hostGate.expire(before: nowMs - options.hostPendingTimeoutMs, alive: { table[$0].id == $1 }) { record in
            var q = record.query
            q.peer = policy.peerID(record.peer)
            q.tier = policy.tier(record.peer)
            let (v, host) = withoutReadHost(s, q, peer: record.peer, policy: policy, nowMs: nowMs)
            let last = s.hostGate.finish(record.handle.index, verdict: v.action)
            settlePending(s, record.handle, record: record, verdict: v, host: host, source: host == nil ? nil : .dns,
                          policy: policy)
            if v.action == .reject, let last, control.count < control.capacity, let parsed = try? PacketParser.parse(last) {
                let k = control.count
                let room = UnsafeMutableRawBufferPointer(rebasing: control.slot(k)[16..<(16 + min(tun.mtu, datagramSlotSize - 48))])
                if let len = buildRejection(answering: last, parsed, into: room) {
                    control.count = k + 1
                    rejects.append((PeerHandle(rawValue: record.peer), k, len))
                }
            }
        }
    }

    /// Gives a later fragment its datagram's ports (RFC 791 / RFC 8200 reassembly key), so it
    /// joins its flow; false for a later fragment whose first fragment was not seen (dropped).
    /// Call with the `flows` lock held.
    @inline(__always)
    func resolveFragment(_ s: FlowState, _ p: inout ParsedPacket, nowMs: Int64) -> Bool {
        guard p.fragment.isFragment else { return true }
        return s.fragments.resolve(&p, now: nowMs)
    }
}
