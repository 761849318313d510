// Building ring records and capture entries (the observer's slow path: someone watches or
// capture is on). Every function here runs with the engine's flow lock held.
import Engine
import Core
import Capture
import LiveFeed
import Packet
import Policy

extension PacketObserver {
    @usableFromInline
    func observe(_ packet: ObservedBytes, _ p: ParsedPacket, handle: FlowHandle, entry: FlowEntry,
                 opened: Bool, action: Verdict, peer: UInt32, fromPeer: Bool)
    {
        let slot = Int(handle.index)
        guard slot < noteCount else { return }
        let note = notes + slot
        if note.pointee.flowID != entry.id {
            note.pointee = FlowNote(flowID: entry.id, peer: peer)
        }
        var sequence: UInt32 = 0
        var offset: UInt64 = 0
        if capturing, let capture, let location = capture.write(packet: packet.bytes, timestampNanoseconds: wallNanoseconds) {
            sequence = location.fileSequence
            offset = location.offset
            if Int64(sequence) != activeSequence.load(ordering: .relaxed) {
                activeSequence.store(Int64(sequence), ordering: .releasing)
            }
            if note.pointee.captureOffset == 0 {
                note.pointee.captureSequence = sequence
                note.pointee.captureOffset = offset
                firstCaptured(entry, location: location)
            }
        }
        guard watching, let ring else { return }
        var r = LiveRecord()
        r.timeNanoseconds = wallNanoseconds
        r.flowID = entry.id
        r.direction = fromPeer ? .out : .in
        r.ipProtocol = p.proto.rawValue
        r.ipVersion = p.source.isIPv6 ? 6 : 4
        r.sourceHigh = p.source.high
        r.sourceLow = p.source.low
        r.destinationHigh = p.destination.high
        r.destinationLow = p.destination.low
        r.sourcePort = p.sourcePort
        r.destinationPort = p.destinationPort
        r.length = UInt32(truncatingIfNeeded: packet.count)
        r.verdict = action
        r.ruleIndex = entry.verdictRuleIndex < 0 ? LiveRecord.noRule : UInt32(entry.verdictRuleIndex)
        r.policyGeneration = entry.verdictGeneration
        r.peerIndex = peer
        r.peerName = peerNames[peer] ?? .none
        if opened {
            r.kind = .flowOpen
            ring.publish(r)
        }
        r.kind = .packet
        r.tcpFlags = p.tcpFlags.rawValue
        r.captureFileSequence = sequence
        r.captureOffset = offset
        ring.publish(r)
    }

    /// Notes a flow's first captured packet: the flow index, and the map for readers.
    func firstCaptured(_ entry: FlowEntry, location: CaptureLocation) {
        flowIndex?.append(CaptureFlowIndex.Entry(
            flowID: entry.id, key: CaptureFlowKey(entry), location: location, timeNanoseconds: wallNanoseconds))
        firstLocations.withLock { $0[entry.id] = location }
    }

    @usableFromInline
    func ended(_ record: FlowRecord, peer: UInt32) {
        let e = record.entry
        if e.id != 0 && capturing { firstLocations.withLock { _ = $0.removeValue(forKey: e.id) } }
        guard watching, let ring else { return }
        var r = LiveRecord()
        r.timeNanoseconds = wallNanoseconds
        r.kind = .flowClose
        r.flowID = e.id
        let a = e.originator
        let b = e.responder
        r.ipProtocol = e.key.proto.rawValue
        r.ipVersion = a.isIPv6 ? 6 : 4
        r.sourceHigh = a.high
        r.sourceLow = a.low
        r.destinationHigh = b.high
        r.destinationLow = b.low
        r.sourcePort = e.originatorPort
        r.destinationPort = e.responderPort
        r.verdict = Verdict(rawValue: e.verdictAction) ?? .allow
        r.ruleIndex = e.verdictRuleIndex < 0 ? LiveRecord.noRule : UInt32(e.verdictRuleIndex)
        r.policyGeneration = e.verdictGeneration
        r.peerIndex = peer
        r.peerName = peerNames[peer] ?? .none
        r.detail = e.bytesOriginal &+ e.bytesReply
        r.detail2 = e.packetsOriginal &+ e.packetsReply
        ring.publish(r)
    }


    // MARK: queued events

    func enqueue(_ event: QueuedEvent) {
        queued.withLock { q in
            if q.events.count < QueuedEvents.capacity {
                q.events.append(event)
            } else {
                q.dropped &+= 1
            }
        }
        hasQueued.store(true, ordering: .releasing)
    }

    func publishQueued() {
        guard let ring else { return }
        hasQueued.store(false, ordering: .relaxed)
        queued.withLock { q in
            for e in q.events {
                var r = e.record
                r.timeNanoseconds = wallNanoseconds
                r.peerName = peerNames[r.peerIndex] ?? .none
                ring.publish(r)
            }
            q.events.removeAll(keepingCapacity: true)
        }
    }
}
