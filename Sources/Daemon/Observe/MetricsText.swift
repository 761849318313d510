import Core
import ControlProtocol

/// The Prometheus text exposition format (version 0.0.4) of a `MetricsSnapshot`: the one owner
/// of every metric name, its help and type. `/metrics` (MetricsListen) and `tunnelctl metrics`
/// (through the control socket) both print what this returns. Names follow Prometheus'
/// conventions: `tunnelvision_` prefix, base units (bytes, seconds), `_total` on counters.
public enum MetricsText {
    /// The `Content-Type` of the format.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// The exposition text of `s`.
    public static func render(_ s: MetricsSnapshot) -> String {
        var out = Writer()
        let st = s.status
        out.family("tunnelvision_build_info", .gauge, "TunnelVision version of the running tunneld (always 1).")
        out.sample("tunnelvision_build_info", [("version", st.version)], 1)
        out.one("tunnelvision_start_time_seconds", .gauge, "When tunneld started (Unix time).", seconds(st.startedAtMs))
        out.one("tunnelvision_peers_configured", .gauge, "Peers known to tunneld (config and runtime).", Double(st.peersConfigured))
        out.one("tunnelvision_peers_connected", .gauge, "Peers with a live session.", Double(st.peersConnected))

        // Per peer.
        let perPeer: [(String, Kind, String, (MetricsSnapshot.Peer) -> Double?)] = [
            ("tunnelvision_peer_receive_bytes_total", .counter, "Transport bytes received from the peer.", { Double($0.rxBytes) }),
            ("tunnelvision_peer_transmit_bytes_total", .counter, "Transport bytes sent to the peer.", { Double($0.txBytes) }),
            ("tunnelvision_peer_receive_packets_total", .counter, "Transport packets received from the peer.", { Double($0.rxPackets) }),
            ("tunnelvision_peer_transmit_packets_total", .counter, "Transport packets sent to the peer.", { Double($0.txPackets) }),
            ("tunnelvision_peer_last_handshake_timestamp_seconds", .gauge,
             "Last completed handshake with the peer (Unix time; 0 = never).", { seconds($0.lastHandshakeMs ?? 0) }),
            ("tunnelvision_peer_session_remaining_seconds", .gauge,
             "Free tier: seconds left in the connected window (only while one is open).", { $0.remainingMs.map { Double(max(0, $0)) / 1000 } }),
            ("tunnelvision_peer_refusals_total", .counter,
             "Handshakes of the peer refused (free-session pause, disabled, expired).", { Double($0.refusals) }),
        ]
        for (name, kind, help, value) in perPeer {
            out.family(name, kind, help)
            for p in s.peers { if let v = value(p) { out.sample(name, [("peer", p.name), ("tier", p.tier.rawValue)], v) } }
        }
        // Byte quotas (peers with a Quota, QuotaUp or QuotaDown): what the window may carry and
        // what it carried so far, by direction (up: sent by the peer, down: sent to it).
        out.family("tunnelvision_peer_quota_bytes", .gauge,
                   "The peer's byte quota per window (direction total, up or down; only the ones configured).")
        for p in s.peers {
            guard let l = p.limits else { continue }
            for (direction, q) in [("total", l.quotaBytes), ("up", l.quotaUpBytes), ("down", l.quotaDownBytes)] {
                if let q { out.sample("tunnelvision_peer_quota_bytes", [("peer", p.name), ("tier", p.tier.rawValue), ("direction", direction)], Double(q)) }
            }
        }
        out.family("tunnelvision_peer_quota_used_bytes", .gauge,
                   "Bytes the peer's current window carried, by direction (up, down); peers with a quota only.")
        for p in s.peers {
            guard let u = p.quotaUsed else { continue }
            for (direction, v) in [("up", u.up), ("down", u.down)] {
                out.sample("tunnelvision_peer_quota_used_bytes", [("peer", p.name), ("tier", p.tier.rawValue), ("direction", direction)], Double(v))
            }
        }
        out.family("tunnelvision_peer_session_state", .gauge,
                   "The peer's session state: 1 for the state it is in (connected, disconnected, paused, disabled, expired), 0 for the others.")
        for p in s.peers {
            for state in PeerSessionState.all {
                out.sample("tunnelvision_peer_session_state", [("peer", p.name), ("tier", p.tier.rawValue), ("state", state.rawValue)],
                           p.session == state ? 1 : 0)
            }
        }

        // Policy.
        out.family("tunnelvision_rule_hits_total", .counter,
                   "Flows decided by the rule (rule = file:line of the rule, or (built-in):0 for a default).")
        for r in s.rules {
            out.sample("tunnelvision_rule_hits_total", [("rule", "\(r.file):\(r.line)"), ("name", r.name ?? "")], Double(r.hits))
        }
        out.one("tunnelvision_policy_generation", .gauge, "Generation of the policy in force (moves on reloads and peer changes).", Double(st.policy.generation))
        out.one("tunnelvision_policy_rules", .gauge, "Rules in the policy in force.", Double(st.policy.ruleCount))
        out.one("tunnelvision_policy_loaded_timestamp_seconds", .gauge, "When the policy in force was loaded (Unix time).", seconds(st.policy.loadedAtMs))
        out.one("tunnelvision_reloads_total", .counter, "Reloads applied (SIGHUP, tunnelctl reload, tunnelctl policy reload).", Double(s.reloads))
        out.one("tunnelvision_reload_errors_total", .counter, "Reloads refused because the config or policy had errors.", Double(s.reloadErrors))

        // Data path.
        out.family("tunnelvision_drops_total", .counter, "Packets dropped by the data path, by reason.")
        for (reason, n) in st.drops.sorted(by: { $0.key < $1.key }) {
            out.sample("tunnelvision_drops_total", [("reason", reason)], Double(n))
        }
        out.one("tunnelvision_flows_active", .gauge, "Flows in the flow table.", Double(st.flowsActive))
        out.one("tunnelvision_flow_table_capacity", .gauge, "Flows the table holds at most.", Double(s.flowCapacity))
        out.one("tunnelvision_flows_opened_total", .counter, "Flows opened.", Double(s.flowStats.opened))
        out.one("tunnelvision_flows_expired_total", .counter, "Flows that ended by idle timeout.", Double(s.flowStats.expired))
        out.one("tunnelvision_flow_evictions_total", .counter, "Live flows evicted because the table was full.", Double(s.flowStats.evicted))
        out.one("tunnelvision_handshakes_total", .counter, "WireGuard handshakes completed.", Double(s.handshakes))
        out.one("tunnelvision_cookie_replies_total", .counter, "Cookie replies sent (under load).", Double(s.cookieReplies))
        out.one("tunnelvision_under_load", .gauge, "1 while handshakes arrive faster than the under-load rate (cookies on).", s.underLoad ? 1 : 0)
        out.one("tunnelvision_handshake_backlog", .gauge, "Handshake messages waiting for the handshake thread.", Double(s.handshakeBacklog))

        // Store.
        let health = st.store ?? StoreHealth()
        out.one("tunnelvision_store_queue_depth", .gauge, "History records waiting in the store writer's queue.", Double(s.store.queueDepth))
        out.one("tunnelvision_store_retained_records", .gauge, "Records held during a store outage, waiting to be written.", Double(health.retained))
        out.family("tunnelvision_store_dropped_records_total", .counter, "History records lost for good, by family.")
        for f in RecordFamily.allCases {
            out.sample("tunnelvision_store_dropped_records_total", [("family", f.rawValue)], Double(health.drops[f]))
        }
        out.one("tunnelvision_store_failed_batches_total", .counter, "Store write transactions that failed.", Double(s.store.failedBatches))
        out.one("tunnelvision_store_outages_total", .counter, "Store outages (a failed write after a success).", Double(s.store.outages))
        out.one("tunnelvision_store_unavailable", .gauge, "1 while the store cannot be written.", health.unavailableSinceMs == nil ? 0 : 1)
        return out.text
    }

    /// Label value escaping of the text format: backslash, double quote and line feed.
    public static func escape(_ value: String) -> String {
        var r = ""
        r.reserveCapacity(value.utf8.count)
        for c in value.unicodeScalars {
            switch c {
            case "\\": r += "\\\\"
            case "\"": r += "\\\""
            case "\n": r += "\\n"
            default: r.unicodeScalars.append(c)
            }
        }
        return r
    }

    /// HELP text escaping: backslash and line feed.
    static func escapeHelp(_ text: String) -> String {
        var r = ""
        for c in text.unicodeScalars {
            switch c {
            case "\\": r += "\\\\"
            case "\n": r += "\\n"
            default: r.unicodeScalars.append(c)
            }
        }
        return r
    }

    static func seconds(_ ms: Int64) -> Double { Double(ms) / 1000 }

    enum Kind: String { case counter, gauge }

    struct Writer {
        var text = ""
        mutating func family(_ name: String, _ kind: Kind, _ help: String) {
            text += "# HELP \(name) \(MetricsText.escapeHelp(help))\n# TYPE \(name) \(kind.rawValue)\n"
        }
        /// A family of one unlabelled sample.
        mutating func one(_ name: String, _ kind: Kind, _ help: String, _ value: Double) {
            family(name, kind, help)
            sample(name, [], value)
        }
        mutating func sample(_ name: String, _ labels: [(String, String)], _ value: Double) {
            text += name
            if !labels.isEmpty {
                text += "{" + labels.map { "\($0.0)=\"\(MetricsText.escape($0.1))\"" }.joined(separator: ",") + "}"
            }
            text += " " + MetricsText.format(value) + "\n"
        }
    }

    /// Integers without a fraction; others with up to millisecond precision.
    static func format(_ v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return String(v)
    }
}
