import Capture
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
import LiveFeed
import Policy
import Store

// Each command's `--json` object (docs/json.md, one section per command). Rows shared between
// commands are in JSONRows.swift.

/// `status --json`.
struct StatusJSON: Encodable {
    struct Offload: Encodable {
        var tun: String
        var udpSegmentation: Bool
        var superPacketsRead: UInt64
        var superPacketsWritten: UInt64
        var packetsCoalesced: UInt64
        var udpCoalescing: Bool
        var coalescedReceives: UInt64
        var coalescedDatagrams: UInt64
    }
    var pid: Int32
    var version: String
    var startedAt: JSONTime
    var uptimeSeconds: Int64
    var interface: String
    var listenPort: UInt16
    var addresses: [String]
    var peersConfigured: Int
    var peersConnected: Int
    var flowsActive: Int
    /// Dropped packets by reason.
    var drops: [String: UInt64]
    var storeQueueDrops: UInt64
    var policy: PolicySummaryJSON
    /// Null from a daemon that does not report offloads.
    @Nullable var offload: Offload?
    /// Null from a daemon that does not report its store writer's health.
    @Nullable var store: Store?
    @Nullable var shared: Shared?
    /// Host learning counters; null when no rule matches on `host` (or an older daemon).
    @Nullable var hosts: [String: UInt64]?
    /// The per-peer status page (`StatusListen`); null when it is off (or an older daemon).
    @Nullable var statusPage: StatusPage?

    /// `StatusListen`: where it listens, what it answered.
    struct StatusPage: Encodable {
        var address: String
        var port: UInt16
        var requests: UInt64
        var refused: UInt64
    }

    /// The shared store.
    struct Shared: Encodable {
        var backend: String
        var gateway: String
        @Nullable var lastSyncAt: JSONTime?
        @Nullable var outageStartedAt: JSONTime?
        @Nullable var error: String?
        var pending: Int
        var localOpens: UInt64
        var sharedOpens: UInt64
        var journalDepth: Int64
        var journalShipped: UInt64
        var journalLost: UInt64
        @Nullable var journalError: String?
        @Nullable var retentionFrom: String?
        @Nullable var retentionSetBy: String?
        @Nullable var retentionSetAt: JSONTime?
    }

    /// The store writer: records lost per family, the outage in progress.
    struct Store: Encodable {
        var dropped: StoreDrops
        var droppedTotal: UInt64
        @Nullable var outageStartedAt: JSONTime?
        var retained: Int
        @Nullable var error: String?
    }

    init(_ s: StatusReply) {
        pid = s.pid
        version = s.version
        startedAt = JSONTime(ms: s.startedAtMs)
        uptimeSeconds = s.uptimeSeconds
        interface = s.interface
        listenPort = s.listenPort
        addresses = s.addresses
        peersConfigured = s.peersConfigured
        peersConnected = s.peersConnected
        flowsActive = s.flowsActive
        drops = s.drops
        hosts = s.hosts
        statusPage = s.statusPage.map { StatusPage(address: $0.address, port: $0.port, requests: $0.requests, refused: $0.refused) }
        storeQueueDrops = s.storeQueueDrops
        policy = PolicySummaryJSON(s.policy)
        store = s.store.map {
            Store(dropped: $0.drops, droppedTotal: $0.drops.total, outageStartedAt: $0.unavailableSinceMs.map { JSONTime(ms: $0) },
                  retained: $0.retained, error: $0.error)
        }
        shared = s.shared.map {
            Shared(backend: $0.backend, gateway: $0.gateway, lastSyncAt: $0.lastSyncAtMs.map { JSONTime(ms: $0) },
                   outageStartedAt: $0.unavailableSinceMs.map { JSONTime(ms: $0) }, error: $0.error, pending: $0.pending,
                   localOpens: $0.localOpens, sharedOpens: $0.sharedOpens, journalDepth: $0.journalDepth,
                   journalShipped: $0.journalShipped, journalLost: $0.journalMissing, journalError: $0.journalError,
                   retentionFrom: $0.retentionFrom, retentionSetBy: $0.retentionSetBy, retentionSetAt: $0.retentionSetAtMs.map { JSONTime(ms: $0) })
        }
        offload = s.offload.map {
            Offload(tun: $0.tun, udpSegmentation: $0.udpSegmentation, superPacketsRead: $0.superPacketsRead,
                    superPacketsWritten: $0.superPacketsWritten, packetsCoalesced: $0.packetsCoalesced,
                    udpCoalescing: $0.udpCoalescing, coalescedReceives: $0.coalescedReceives, coalescedDatagrams: $0.coalescedDatagrams)
        }
    }
}

/// `kick --json`.
struct KickJSON: Encodable {
    var peer: String
    /// False when the peer had no session.
    var endedSession: Bool
    init(_ k: KickReply) {
        peer = k.peer
        endedSession = k.endedSession
    }
}

/// `peer tier NAME TIER --json`.
struct PeerTierJSON: Encodable {
    var peer: String
    var tier: PeerTier
    var previous: PeerTier
    /// True when tunneld applied it now; false when tunneld was not running (applied at its start).
    var inForce: Bool
}

/// `peer list --json` (an array of these) and `peer show --json` (one): a configured peer.
struct ConfiguredPeerJSON: Encodable {
    var peer: String
    var publicKey: String
    var allowedIPs: [String]
    /// The tier in force (an override, else `Tier =`).
    var tier: PeerTier
    /// `Tier =` of the peer's section.
    var configuredTier: PeerTier
    /// Where `tier` comes from: `config`, `admin` (`peer tier`), `shared` (the shared store).
    var tierOrigin: String
    @Nullable var expiresAt: String?
    var disabled: Bool
    /// `enabled`, `disabled` or `expired`.
    var state: String
    /// From tunneld when it runs; null otherwise or before the first handshake.
    @Nullable var lastHandshake: String?
}

/// `policy show --json`.
struct PolicyShowJSON: Encodable {
    /// One rule, or one of the two defaults (after the rules, `out` then `in`).
    struct Rule: Encodable {
        @Nullable var rule: RuleRef?
        var `default`: Bool
        /// The default's direction; null for a rule (its text says).
        @Nullable var direction: Direction?
        var text: String
        var hits: UInt64
    }
    var policy: PolicySummaryJSON
    var rules: [Rule]

    init(_ r: PolicyShowReply) {
        policy = PolicySummaryJSON(r.policy)
        let count = min(r.policy.ruleCount, r.rules.count)
        rules = r.rules.enumerated().map { i, s in
            if i < count {
                return Rule(rule: RuleRef(file: s.file, line: s.line, name: s.name), default: false, direction: nil, text: s.text,
                            hits: s.hits)
            }
            let d: Direction? = i - count == 0 ? .out : (i - count == 1 ? .in : nil)
            return Rule(rule: nil, default: true, direction: d, text: s.text, hits: s.hits)
        }
    }

    /// The running rules by `LiveRecord.ruleIndex` (the defaults left out).
    static func ruleTable(_ r: PolicyShowReply) -> [RuleRef] {
        r.rules.prefix(r.policy.ruleCount).map { RuleRef(file: $0.file, line: $0.line, name: $0.name) }
    }
}

/// `policy reload --json`.
struct PolicyReloadJSON: Encodable {
    /// True when the new policy runs; false when the old one keeps running (see `errors`).
    var reloaded: Bool
    var policy: PolicySummaryJSON
    var errors: [DiagnosticJSON]
    var warnings: [DiagnosticJSON]

    init(_ r: PolicyReloadReply) {
        reloaded = r.succeeded
        policy = PolicySummaryJSON(r.policy)
        errors = r.errors.map(DiagnosticJSON.init)
        warnings = r.warnings.map(DiagnosticJSON.init)
    }
}

/// `policy check --json`.
struct PolicyCheckJSON: Encodable {
    struct Defaults: Encodable {
        var out: Verdict
        var `in`: Verdict
    }
    var directory: String
    var files: [String]
    var ruleCount: Int
    var defaults: Defaults
    var errors: [DiagnosticJSON]
    var warnings: [DiagnosticJSON]
    /// Rules matching on `host`.
    var hostRules: [RuleRef]
    /// Rules with a `during` window.
    var duringRules: [RuleRef]
    var ok: Bool

    init(directory: String, set: PolicySet) {
        func diagnostic(_ d: Policy.PolicyDiagnostic) -> DiagnosticJSON {
            DiagnosticJSON(file: d.location.file, line: d.location.line, column: d.location.column, message: d.message, hint: nil)
        }
        self.directory = directory
        files = set.files
        ruleCount = set.rules.count
        defaults = Defaults(out: set.defaultOut.action, in: set.defaultIn.action)
        errors = set.errors.map(diagnostic)
        warnings = set.warnings.map(diagnostic)
        hostRules = set.rules.filter { !$0.hosts.isEmpty }.map(RuleRef.init)
        duringRules = set.rules.filter { $0.window != nil }.map(RuleRef.init)
        ok = !set.hasErrors
    }
}

/// `policy test --json`.
struct PolicyTestJSON: Encodable {
    var flow: FlowQueryJSON
    var directory: String
    var verdict: Verdict
    var allowed: Bool
    var `default`: Bool
    /// The deciding rule; null when a default decided.
    @Nullable var rule: RuleRef?
    /// The rule or `default` line as written, or a description of the built-in default.
    var text: String
    @Nullable var reason: String?
    /// The weekday and local time the `during` windows were evaluated at (`wed 12:00`).
    var localClock: String

    init(flow: PolicyFlow, zone: Zone, directory: String, why: PolicyExplanation, localClock: String) {
        self.flow = FlowQueryJSON(flow, zone: zone)
        self.directory = directory
        verdict = why.action
        allowed = why.action == .allow
        self.default = why.isDefault
        rule = why.ruleRef
        text = why.text
        reason = why.reason
        self.localClock = localClock
    }
}

extension PolicyExplanation {
    /// The deciding rule as JSON; nil for a default.
    var ruleRef: RuleRef? {
        guard !isDefault, let l = location else { return nil }
        return RuleRef(file: l.file, line: l.line, name: name)
    }
}

/// `explain 'FLOW' --json`.
struct FlowExplanationJSON: Encodable {
    var flow: FlowQueryJSON
    var verdict: Verdict
    var allowed: Bool
    var `default`: Bool
    @Nullable var rule: RuleRef?
    var text: String
    @Nullable var reason: String?
    /// Refused attempts of this destination in the store (coalesced rows summed).
    var refusedCount: Int64
    @Nullable var firstRefused: JSONTime?
    @Nullable var lastRefused: JSONTime?
    var daemonRunning: Bool
    /// Matching flows in the store (at most 20).
    var flows: [FlowRow]
    /// How many matching flows the store has that are not closed.
    var liveFlows: Int
    /// Matching flows in the daemon's table now; null when tunneld is not running.
    @Nullable var live: [FlowRow]?
}

/// `timeline --json`.
struct TimelineJSON: Encodable {
    /// Null for `--since forever`.
    @Nullable var since: JSONTime?
    var truncated: Bool
    var events: [TimelineEvent]
}

/// One line of the timeline: its time, kind and text, and the row it comes from (exactly one
/// of `flow`, `refusal`, `session`, `audit`, `marker` is not null).
struct TimelineEvent: Encodable {
    /// `flow-open`, `flow-close`, `flow-block`, `refusal`, `session-start`, `session-end`,
    /// `audit-start`, `audit-stop`, `marker`.
    var event: String
    var at: JSONTime
    /// Row id in its table (flows: the daemon's flow id).
    var id: Int64
    /// The gateway that recorded the row, from a shared store; null for this router's own.
    @Nullable var gateway: String?
    @Nullable var peer: String?
    /// The line a person reads.
    var summary: String
    @Nullable var flow: FlowRow?
    @Nullable var refusal: RefusalRow?
    @Nullable var session: SessionRow?
    @Nullable var audit: AuditSessionRow?
    @Nullable var marker: MarkerRow?
}

/// `audit list --json`.
struct AuditListJSON: Encodable {
    var auditSessions: [AuditSessionRow]
    var markers: [MarkerRow]
}

/// `retention show|set --json`.
struct RetentionJSON: Encodable {
    /// A setting's value by its kind: durations in seconds, sizes in bytes (null: forever /
    /// unlimited), `capture` a bool, `capture-detail` a string.
    enum Value: Encodable {
        case seconds(Int64?)
        case bytes(Int64?)
        case flag(Bool)
        case text(String)

        var unit: String? {
            switch self {
            case .seconds: return "seconds"
            case .bytes: return "bytes"
            case .flag, .text: return nil
            }
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.singleValueContainer()
            switch self {
            case .seconds(let ms): if let ms { try c.encode(JSONSeconds(ms: ms)) } else { try c.encodeNil() }
            case .bytes(let b): if let b { try c.encode(b) } else { try c.encodeNil() }
            case .flag(let f): try c.encode(f)
            case .text(let t): try c.encode(t)
            }
        }

        init(_ s: Settings, key: String) {
            let r = s.retention
            switch key {
            case "flows": self = .seconds(r.flowsMaxAgeMs)
            case "refusals": self = .seconds(r.refusalsMaxAgeMs)
            case "sessions": self = .seconds(r.sessionsMaxAgeMs)
            case "markers": self = .seconds(r.markersMaxAgeMs)
            case "pcap-bytes": self = .bytes(r.pcapMaxBytes)
            case "pcap-age": self = .seconds(r.pcapMaxAgeMs)
            case "capture": self = .flag(s.capture.enabled)
            case "capture-detail": self = .text(s.capture.detail.rawValue)
            default: self = .text(s.value(forKey: key) ?? "?")
            }
        }
    }
    struct Setting: Encodable {
        var key: String
        var path: String
        var value: Value
        /// `seconds`, `bytes`, or null for a flag or a word.
        @Nullable var unit: String?
        /// The value as `retention set` takes it (`7d`, `2GB`, `forever`, `on`).
        var text: String
        /// True when the value is the factory one because the row's was missing or bad.
        var defaulted: Bool
        @Nullable var reason: String?
    }
    var settings: [Setting]
    /// Fields of the row this tunnelctl does not know (ignored).
    var unknown: [String]
    /// True when there is no settings row (every value is a factory value).
    var empty: Bool
    /// Where the retention values came from: `local`, `shared`, or `local-copy` (`--local`).
    var retentionFrom: String
    /// The shared store (`Store`), null with `Store = local`.
    @Nullable var sharedStore: String? = nil
    /// The gateway that stored the shared retention, and when (null: not from the shared store).
    @Nullable var sharedBy: String? = nil
    @Nullable var sharedAt: JSONTime? = nil

    init(_ d: SettingsDecoding, source: Tunnelctl.RetentionSource) {
        switch source {
        case .local: retentionFrom = "local"
        case .localCopy(let store): retentionFrom = "local-copy"; sharedStore = store
        case .sharedUnset(let store): retentionFrom = "local"; sharedStore = store
        case .shared(let store, let row):
            retentionFrom = "shared"
            sharedStore = store
            sharedBy = row.gateway
            sharedAt = JSONTime(ms: row.changedAt)
        }
        settings = Settings.keys.map { key, path in
            let why = d.defaulted.first(where: { $0.path == path })
            let value = Value(d.settings, key: key)
            return Setting(key: key, path: path, value: value, unit: value.unit, text: d.settings.value(forKey: key) ?? "?",
                           defaulted: why != nil, reason: why.map { "\($0.reason)" })
        }
        unknown = d.unknown
        empty = d.wasEmpty
    }
}

/// `retention show --json` when the row is not JSON (exit 1).
struct RetentionErrorJSON: Encodable {
    var error: String
    /// The row's text as stored.
    var raw: String
}

/// `prune [--dry-run] --json`.
struct PruneJSON: Encodable {
    struct Family: Encodable {
        /// `flows`, `refusals`, `sessions`, `markers`, `audit-sessions`.
        var family: String
        var rows: Int
        /// Bytes freed (real run) or an estimate (dry run); null when unknown.
        @Nullable var bytes: Int64?
        /// The family's retention; null for forever.
        @Nullable var maxAgeSeconds: JSONSeconds?
        /// Rows strictly older were due; null when kept forever.
        @Nullable var cutoff: JSONTime?
    }
    struct Pcap: Encodable {
        var files: Int
        var bytes: Int64
        /// `pcap-bytes`; null for unlimited.
        @Nullable var maxBytes: Int64?
        /// `pcap-age`; null for forever.
        @Nullable var maxAgeSeconds: JSONSeconds?
    }
    var dryRun: Bool
    var now: JSONTime
    var families: [Family]
    var rows: Int
    var bytesReclaimed: Int64
    /// Null when the capture directory was not pruned.
    @Nullable var pcap: Pcap?
    /// The shared store's prune: null without a shared store, and on a dry run.
    @Nullable var shared: Shared? = nil

    /// Rows the shared store's prune deleted, per family (every gateway's rows).
    struct Shared: Encodable {
        /// `postgresql` or `sqlite`.
        var backend: String
        var flows: Int64
        var sessions: Int64
        var refusals: Int64
        var markers: Int64
        var rows: Int64
    }
}

/// `capture list --json` (one per file).
struct CaptureFileJSON: Encodable {
    var sequence: UInt32
    var path: String
    var bytes: Int
    @Nullable var firstPacketAt: JSONTime?
    @Nullable var lastPacketAt: JSONTime?
    @Nullable var packets: Int?

    init(_ f: CaptureFileInfo) {
        sequence = f.sequence
        path = f.path
        bytes = f.size
        firstPacketAt = f.firstPacketNanoseconds.map(JSONTime.init(nanoseconds:))
        lastPacketAt = f.lastPacketNanoseconds.map(JSONTime.init(nanoseconds:))
        packets = f.packetCount
    }
}

/// `watch --json`: one ring record per line. Every key is present in every line; what does not
/// apply to the record's kind is null.
struct WatchRecordJSON: Encodable {
    var time: JSONTime
    /// `packet`, `flow-open`, `flow-close`, `refusal`, `handshake` (`kind-N` from a newer daemon).
    var kind: String
    @Nullable var peer: String? = nil
    @Nullable var peerIndex: UInt32? = nil
    @Nullable var direction: Direction? = nil
    @Nullable var proto: IPProtocol? = nil
    @Nullable var ipVersion: UInt8? = nil
    @Nullable var src: String? = nil
    @Nullable var srcPort: UInt16? = nil
    @Nullable var dst: String? = nil
    @Nullable var dstPort: UInt16? = nil
    /// Packet length in bytes (packet and flow-open records).
    @Nullable var length: UInt32? = nil
    /// tcpdump-style flags of a TCP packet (`S`, `S.`, `F.`…).
    @Nullable var tcpFlags: String? = nil
    /// flow-close: the flow's totals.
    @Nullable var bytes: UInt64? = nil
    @Nullable var packets: UInt64? = nil
    @Nullable var verdict: Verdict? = nil
    @Nullable var rule: RuleRef? = nil
    @Nullable var `default`: Bool? = nil
    @Nullable var flowId: UInt64? = nil
    /// Packet records: where the packet is in the capture files; null when not captured.
    @Nullable var capture: CaptureRef? = nil
    /// Flow-host records: the flow's host (a name cut at 64 bytes ends in "…").
    @Nullable var host: String? = nil
    /// Refusal records: the daemon's reason code and its name.
    @Nullable var reasonCode: UInt64? = nil
    @Nullable var reason: String? = nil

    /// `rules` is the running policy's rule table (`PolicyShowJSON.ruleTable`); nil when
    /// tunnelctl could not ask the daemon (then a rule's `rule` and `default` are null).
    init(_ r: LiveRecord, rules: [RuleRef]?) {
        time = JSONTime(nanoseconds: r.timeNanoseconds)
        kind = r.kind.description
        let name = r.peerName.description
        peer = name.isEmpty ? nil : name
        peerIndex = r.peerIndex == LiveRecord.noPeer ? nil : r.peerIndex
        switch r.kind {
        case .refusal:
            reasonCode = r.detail
            reason = RefusalCode.name(ofRaw: r.detail)
            return
        case .handshake:
            return
        case .flowHost:
            host = r.hostName
            flowId = r.flowID
            verdict = r.verdict
            return
        default:
            break
        }
        let p = IPProtocol(rawValue: r.ipProtocol)
        if r.kind != .flowClose { direction = r.direction }
        proto = p
        ipVersion = r.ipVersion
        src = Tunnelctl.address(r, source: true)
        dst = Tunnelctl.address(r, source: false)
        if p.hasPorts {
            srcPort = r.sourcePort
            dstPort = r.destinationPort
        }
        if r.kind == .flowClose {
            bytes = r.detail
            packets = r.detail2
        } else {
            length = r.length
            if r.kind == .packet && p == .tcp { tcpFlags = Tunnelctl.flagsText(r.tcpFlags) }
        }
        verdict = r.verdict
        if r.ruleIndex == LiveRecord.noRule {
            self.default = r.verdict == nil || r.verdict == .pending ? nil : true
        } else {
            self.default = false  // a rule decided; named only from its own generation's table
            if let rules, Int(r.ruleIndex) < rules.count { rule = rules[Int(r.ruleIndex)] }
        }
        flowId = r.flowID
        if r.kind == .packet, r.captureOffset != 0 {
            capture = CaptureRef(CaptureLocation(fileSequence: r.captureFileSequence, offset: r.captureOffset))
        }
    }
}
