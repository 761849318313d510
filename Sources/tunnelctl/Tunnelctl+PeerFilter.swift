import Core
import Config
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Store

/// `--peer NAME` of `refusals`, `flows`, `timeline` and `watch`: a filter that names nobody would
/// answer "nothing", which reads as "that peer did nothing" — so a name that is neither configured
/// nor in the history is an error with a did-you-mean (exit 1), never an empty or a full answer.
/// A name the history holds rows of is fine without a [Peer] section: a removed peer keeps its
/// flows, refusals and sessions.
extension Tunnelctl {
    /// Checks a history command's `--peer` against the configuration, then `source` (the history
    /// the command reads; nil when there is none yet).
    static func checkHistoryPeer(_ name: String, _ config: TunnelConfig, _ source: HistorySource?) throws {
        if config.peer(named: name) != nil { return }
        if let source, try CLIStore.call({ try hasHistory(of: name, source.reader) }) { return }
        throw unknownPeer(name, config, alsoIn: source == nil ? "" : " or the history")
    }

    /// Whether `reader` holds any flow, refusal or session of `peer` (on any gateway).
    static func hasHistory(of peer: String, _ reader: any HistoryReading) throws -> Bool {
        try !reader.historyFlows(since: .min, peer: peer, gateway: nil, blockedOnly: false, limit: 1).isEmpty
            || !reader.historyRefusals(since: .min, peer: peer, gateway: nil, limit: 1).isEmpty
            || !reader.historySessions(since: .min, peer: peer, gateway: nil, limit: 1).isEmpty
    }

    /// `watch --peer NAME`: a configured peer, or one the running tunneld reports (`others`, nil
    /// when it could not be asked); live records come only from peers tunneld knows.
    static func checkLivePeer(_ name: String, configured: [String]?, others: [String]?) throws {
        if configured?.contains(name) == true || others?.contains(name) == true { return }
        guard configured != nil || others != nil else { return }  // nothing to check against
        let names = (configured ?? []) + (others ?? []).filter { !(configured ?? []).contains($0) }
        throw CLIError.failure("no peer named '\(name)'\(DidYouMean.suffix(name, names)) (\(peerList(names)))")
    }

    /// The "no peer named …" error of a filter (`alsoIn`: where else it was looked for); configured
    /// names for the did-you-mean.
    static func unknownPeer(_ name: String, _ config: TunnelConfig, alsoIn: String) -> CLIError {
        let names = config.peers.map(\.name)
        return CLIError.failure("no peer named '\(name)' in \(config.sourceDescription)\(alsoIn)\(DidYouMean.suffix(name, names)) (\(peerList(names)))")
    }

    /// `configured: alice, bob` / `no peer is configured`.
    static func peerList(_ names: [String]) -> String {
        names.isEmpty ? "no peer is configured" : "configured: " + names.joined(separator: ", ")
    }
}
