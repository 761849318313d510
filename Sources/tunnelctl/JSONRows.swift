import ControlProtocol
import Core
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Store

// The row types shared by several commands' `--json` (docs/json.md "Shared objects"). A thing
// that appears in several commands has one type here.

/// A flow: `flows`, `explain 'FLOW'` (`flows`, `live`) and `timeline` (`flow`).
struct FlowRow: Encodable {
    var id: Int64
    /// The gateway that recorded the row (`GatewayName`) when read from a shared store; null
    /// for this router's own store.
    @Nullable var gateway: String?
    @Nullable var peer: String?
    var proto: IPProtocol
    var src: String
    @Nullable var srcPort: UInt16?
    var dst: String
    @Nullable var dstPort: UInt16?
    @Nullable var host: String?
    var verdict: String
    @Nullable var rule: RuleRef?
    /// True when a default decided, false when a rule did, null when not known (pending, or a
    /// live flow the store has not recorded).
    @Nullable var `default`: Bool?
    /// The decision as it was taken: why (the rule's reason, else its name, else its text; or
    /// `default ACTION`), the peer's tier then, and the policy generation that decided. Null
    /// when the row does not record them (stored by an older tunneld, or not decided yet).
    @Nullable var reason: String?
    @Nullable var tier: String?
    @Nullable var generation: UInt64?
    var firstSeen: JSONTime
    var lastSeen: JSONTime
    @Nullable var closedAt: JSONTime?
    @Nullable var closeReason: String?
    var bytesOut: UInt64
    var bytesIn: UInt64
    var packetsOut: UInt64
    var packetsIn: UInt64
    /// The first captured packet of the flow.
    @Nullable var capture: CaptureRef?

    /// A flow row of the store.
    init(_ f: Flow, gateway: String? = nil) {
        let p = IPProtocol(rawValue: f.proto)
        id = f.id
        self.gateway = gateway
        peer = f.peer
        proto = p
        src = f.src.description
        srcPort = p.hasPorts ? f.srcPort : nil
        dst = f.dst.description
        dstPort = p.hasPorts ? f.dstPort : nil
        host = f.host
        verdict = f.verdict.name
        let decided = RuleRef.stored(f.rule, decision: f.decision, decided: f.verdict != .pending)
        rule = decided.rule
        self.default = decided.isDefault
        reason = f.decision?.reason
        tier = f.decision?.tier
        generation = f.decision?.generation
        firstSeen = JSONTime(ms: f.firstSeen)
        lastSeen = JSONTime(ms: f.lastSeen)
        closedAt = f.closedAt.map(JSONTime.init(ms:))
        closeReason = f.closeReason
        bytesOut = f.counters.bytesOut
        bytesIn = f.counters.bytesIn
        packetsOut = f.counters.packetsOut
        packetsIn = f.counters.packetsIn
        capture = f.capture.map(CaptureRef.init)
    }

    /// A flow in the daemon's table now; host, rule and capture come from the store's row of
    /// the same id (`stored`) when there is one (the control reply does not carry them).
    init(_ f: LiveFlow, stored: FlowRow?) {
        let p = IPProtocol(rawValue: f.proto)
        id = f.id
        gateway = nil
        peer = f.peer
        proto = p
        src = f.src
        srcPort = p.hasPorts ? f.srcPort : nil
        dst = f.dst
        dstPort = p.hasPorts ? f.dstPort : nil
        host = stored?.host
        verdict = f.verdict
        rule = stored?.rule
        self.default = stored?.default
        reason = stored?.reason
        tier = stored?.tier
        generation = stored?.generation
        firstSeen = JSONTime(ms: f.firstSeenMs)
        lastSeen = JSONTime(ms: f.lastSeenMs)
        closedAt = nil
        closeReason = nil
        bytesOut = f.bytesOut
        bytesIn = f.bytesIn
        packetsOut = f.packetsOut
        packetsIn = f.packetsIn
        capture = stored?.capture
    }
}

/// A coalesced refusal: `refusals` and `timeline` (`refusal`).
struct RefusalRow: Encodable {
    var id: Int64
    /// The gateway that recorded the row (`GatewayName`) when read from a shared store; null
    /// for this router's own store.
    @Nullable var gateway: String?
    /// `session` or `flow`.
    var kind: String
    var peer: String
    @Nullable var rule: RuleRef?
    @Nullable var `default`: Bool?
    /// Flow refusals: the refused destination (null for session refusals).
    @Nullable var proto: IPProtocol?
    @Nullable var dst: String?
    @Nullable var dstPort: UInt16?
    /// Flow refusals: the host the flow was known by (the newest in this row); null when none.
    @Nullable var host: String?
    var reason: String
    /// Flow refusals: the peer's tier and the policy generation when the rule decided (null
    /// for session rows, `flow-limit` rows and rows stored by an older tunneld).
    @Nullable var tier: String?
    @Nullable var generation: UInt64?
    /// Session: the end of the window; flow: the start of the one-hour period.
    var window: JSONTime
    var count: Int64
    var firstAt: JSONTime
    var lastAt: JSONTime

    init(_ r: Refusal, gateway: String? = nil) {
        id = r.id
        self.gateway = gateway
        kind = r.kind.rawValue
        peer = r.peer
        let decided: (rule: RuleRef?, isDefault: Bool?) = r.kind == .flow ? RuleRef.stored(r.rule, decision: r.decision) : (nil, nil)
        rule = decided.rule
        self.default = decided.isDefault
        let key = StoredFlowKey(r.flowKey)
        proto = key?.proto
        dst = key?.dst.description
        dstPort = key?.dstPort
        host = r.host.isEmpty ? nil : r.host
        reason = r.reason
        tier = r.decision?.tier
        generation = r.decision?.generation
        window = JSONTime(ms: r.window)
        count = r.count
        firstAt = JSONTime(ms: r.firstAt)
        lastAt = JSONTime(ms: r.lastAt)
    }
}

/// A peer's session (`timeline` `session`).
struct SessionRow: Encodable {
    var id: Int64
    /// The gateway that recorded the row (`GatewayName`) when read from a shared store; null
    /// for this router's own store.
    @Nullable var gateway: String?
    var peer: String
    var startedAt: JSONTime
    @Nullable var endedAt: JSONTime?
    @Nullable var endReason: String?
    var rxBytes: Int64
    var txBytes: Int64

    init(_ s: Session, gateway: String? = nil) {
        id = s.id
        self.gateway = gateway
        peer = s.peer
        startedAt = JSONTime(ms: s.startedAt)
        endedAt = s.endedAt.map(JSONTime.init(ms:))
        endReason = s.endReason?.rawValue
        rxBytes = s.rxBytes
        txBytes = s.txBytes
    }
}

/// An audit session: `audit list`, `audit start`, `audit stop`, `timeline` (`audit`).
struct AuditSessionRow: Encodable {
    var id: Int64
    var label: String
    var startedAt: JSONTime
    @Nullable var endedAt: JSONTime?
    var open: Bool

    init(_ a: AuditSession) {
        id = a.id
        label = a.label
        startedAt = JSONTime(ms: a.startedAt)
        endedAt = a.endedAt.map(JSONTime.init(ms:))
        open = a.endedAt == nil
    }
}

/// A marker: `audit list`, `audit mark`, `timeline` (`marker`).
struct MarkerRow: Encodable {
    var id: Int64
    /// The gateway that recorded the row (`GatewayName`) when read from a shared store; null
    /// for this router's own store.
    @Nullable var gateway: String?
    var at: JSONTime
    var label: String
    /// `manual` or `automatic`.
    var kind: String
    @Nullable var auditSessionId: Int64?
    @Nullable var detail: String?

    init(_ m: Marker, gateway: String? = nil) {
        id = m.id
        self.gateway = gateway
        at = JSONTime(ms: m.at)
        label = m.label
        kind = m.kind.rawValue
        auditSessionId = m.auditSessionId
        detail = m.detail
    }
}

/// The running policy: `status` and `policy show|reload` (`policy`).
struct PolicySummaryJSON: Encodable {
    var generation: UInt64
    var files: [String]
    var ruleCount: Int
    var loadedAt: JSONTime

    init(_ p: PolicySummary) {
        generation = p.generation
        files = p.files
        ruleCount = p.ruleCount
        loadedAt = JSONTime(ms: p.loadedAtMs)
    }
}

/// A policy error or warning: `policy check` and `policy reload`.
struct DiagnosticJSON: Encodable {
    var file: String
    /// 0 for a directory-level diagnostic.
    var line: Int
    var column: Int
    var message: String
    @Nullable var hint: String?

    init(file: String, line: Int, column: Int, message: String, hint: String?) {
        self.file = file
        self.line = line
        self.column = column
        self.message = message
        self.hint = hint
    }

    init(_ d: ControlProtocol.PolicyDiagnostic) {
        self.init(file: d.file, line: d.line, column: d.column, message: d.message, hint: d.hint)
    }
}

/// A peer: `peers` (from the daemon, or from the configuration and the store without it).
struct PeerJSON: Encodable {
    var peer: String
    var publicKey: String
    var tier: PeerTier
    /// `connected`, `disconnected` or `paused`.
    var state: String
    /// The endpoint last heard from: address and UDP port.
    @Nullable var endpoint: String?
    @Nullable var endpointPort: UInt16?
    @Nullable var lastHandshake: JSONTime?
    var rxBytes: UInt64
    var txBytes: UInt64
    @Nullable var allowedUntil: JSONTime?
    @Nullable var reconnectAt: JSONTime?
    var allowedIPs: [String]
    /// The limits in force, as `PeerLimits.summary` writes them (null: the daemon did not say).
    @Nullable var limits: String?
    /// With a quota: bytes used in the window, and `312.0 MiB of 1GiB used`.
    @Nullable var quotaUsedUp: UInt64?
    @Nullable var quotaUsedDown: UInt64?
    @Nullable var quota: String?

    init(_ p: PeerStatus) {
        peer = p.name
        publicKey = p.publicKey
        tier = p.tier
        state = p.session.rawValue
        if let text = p.endpoint {
            if let e = Endpoint(text) {
                endpoint = e.address.description
                endpointPort = e.port
            } else if let hp = HostPort(text) {
                endpoint = hp.host
                endpointPort = hp.port
            } else {
                endpoint = text
                endpointPort = nil
            }
        } else {
            endpoint = nil
            endpointPort = nil
        }
        lastHandshake = p.lastHandshakeMs.map(JSONTime.init(ms:))
        rxBytes = p.rxBytes
        txBytes = p.txBytes
        allowedUntil = p.allowedUntilMs.map(JSONTime.init(ms:))
        reconnectAt = p.reconnectAtMs.map(JSONTime.init(ms:))
        allowedIPs = p.allowedIPs
        limits = p.limits?.summary
        quotaUsedUp = p.quotaUsed?.up
        quotaUsedDown = p.quotaUsed?.down
        quota = p.quotaUsed.flatMap { u in p.limits?.quotaText(u) }
    }
}
