import Core
import Config
import ControlProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Runtime
import Store

/// Helpers shared by the history commands (`session`, `explain`, `refusals`, `flows`, `peer
/// tier`, `peers` without the daemon): the store, the time they answer for, and time text.
///
/// "Now" is `cliNow()` (Tunnelctl+Audit.swift; tests fix it); `TUNNELCTL_TZ` (a time-zone
/// identifier) overrides the local time zone (else `TZ` / the system's applies).
extension Tunnelctl {
    static var cliTimeZone: Zone { TimeText.displayZone }

    /// `10:15:00 CET` in the local zone.
    static func clockText(_ ms: Int64) -> String { TimeText.clock(ms, zone: cliTimeZone) }

    /// `2026-11-29 10:15:00 CET` in the local zone.
    static func dateTimeText(_ ms: Int64) -> String { TimeText.local(ms, zone: cliTimeZone) }

    /// ISO-8601 UTC with milliseconds: `2026-11-29T10:15:00.000Z` (for --json).
    static func isoText(_ ms: Int64) -> String { TimeText.iso(ms) }

    /// What a read command says instead of an empty answer when the store does not exist.
    static func noHistoryYet(_ config: TunnelConfig) -> String {
        "no history yet: the store \(config.interface.storePath) does not exist (tunneld has not run; or StateDirectory points elsewhere)"
    }

    /// The daemon's answer, or nil when it is not running, or when it answered this request with
    /// an error (an older daemon): history commands then use the store. Anything else — this user
    /// may not use control.sock, no answer in time, a garbled reply — is an error, never "tunneld
    /// is not running".
    static func askIfRunning(_ config: TunnelConfig, _ request: ControlRequest) throws -> ControlResponse? {
        let client = ControlClient(socketPath: config.interface.controlSocketPath)
        let reply: ControlResponse
        do {
            reply = try client.send(request)
        } catch {
            if case .daemonNotRunning = error { return nil }
            throw CLIError.failure("\(error)")
        }
        if case .error = reply { return nil }
        return reply
    }

    /// The configured peer called `name`, or a "not found" error naming the configured ones.
    static func configuredPeer(_ name: String, _ config: TunnelConfig) throws -> PeerConfig {
        guard let p = config.peer(named: name) else {
            let names = config.peers.map(\.name)
            throw CLIError.failure("no peer named '\(name)' in \(config.sourceDescription)\(DidYouMean.suffix(name, names)) (configured: \(names.joined(separator: ", ")))")
        }
        return p
    }

    /// A peer's tier: the store's override when there is one, else the configuration's.
    static func tier(of peer: PeerConfig, _ store: StateStore?) throws -> PeerTier {
        try WindowSource(local: store).tier(of: peer)
    }
}

extension TunnelConfig {
    /// "the configuration" (the CLI names the file where it can).
    var sourceDescription: String { "the configuration" }
}

/// Where `flows`, `refusals` and `timeline` read: with a shared store configured
/// (`Store = postgresql://…` or `sqlite:/…`), every gateway's history from it, each row with its
/// `GatewayName`; `--local` reads this router's own `state.db` (its journal) instead. A shared
/// store that cannot be read is an error naming it and `--local` — never an empty answer.
struct HistorySource {
    /// What answers the questions.
    var reader: any HistoryReading
    /// True for the shared store: rows carry their gateway (a GATEWAY column is shown).
    var shared: Bool
    /// This router's store, when it exists (audit sessions are never shipped: they are read here).
    var local: StateStore?
}

extension Tunnelctl {
    /// The `--local` and `--gateway NAME` options of the history commands.
    static func historyScope(_ opts: ParsedOptions) -> (local: Bool, gateway: String?) {
        (opts[.local], opts[.gateway])
    }

    /// The history to read, or nil when neither a shared store is configured nor a local one
    /// exists yet (callers say `noHistoryYet`).
    static func historySource(_ config: TunnelConfig, local: Bool, gateway: String?) throws -> HistorySource? {
        let setting = config.interface.store
        if let gateway {
            guard setting.isShared else {
                throw CLIError.failure("--gateway \(gateway): this router keeps only its own history (Store = local); --gateway reads a shared store (Store = postgresql://… in [Interface])")
            }
            guard !local else { throw CLIError.failure("--gateway reads the shared store and --local this router's own store: give one of them") }
            guard SharedStoreSetting.isValidGatewayName(gateway) else {
                throw CLIError.failure("--gateway '\(gateway)' is not a gateway name (1–64 of A–Z a–z 0–9 _ . -)")
            }
        }
        let own = try CLIStore.read(config)
        guard setting.isShared, !local else {
            // This router's own history, through the same questions (`LocalSharedState`).
            return try SharedStoreSetting.local.backend(local: own, gateway: config.interface.gatewayNameInForce, passFile: nil)
                .map { HistorySource(reader: $0, shared: false, local: own) }
        }
        do {
            let shared = try setting.open(passFile: config.interface.storePassFile, readOnly: true)!
            return HistorySource(reader: shared, shared: true, local: own)
        } catch {
            throw CLIError.failure("cannot read the shared store \(setting.text): \(error)\n  this gateway's own history (its journal, not yet shipped rows included): add --local")
        }
    }
}
