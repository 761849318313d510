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
import Store

/// `tunnelctl peer tier NAME free|premium` (docs/session.md "Tier changes"): one
/// owner for the change. With tunneld running, it is asked (control request `peerTier`) and applies
/// the tier and writes the store in one step; only when tunneld is not running does tunnelctl write
/// the store itself (and the shared store, when one is configured), and tunneld applies it at its
/// next start. The window is never touched: premium ignores it, and a move back to free finds the
/// pause it was in.
extension Tunnelctl {
    /// `text` as a tier of `config` (predefined or a `[Tier NAME]` section), else a usage error
    /// listing the configured ones.
    static func configuredTier(_ text: String, _ config: TunnelConfig, what: String) throws -> PeerTier {
        let known = config.tiers.names.map(\.rawValue)
        guard let t = PeerTier(rawValue: text), config.tiers.isConfigured(t) else {
            let guess = DidYouMean.closest(text, among: known).map { "did you mean '\($0)'? " } ?? ""
            throw CLIError.usage("\(what) '\(text)' is not a configured tier; \(guess)configured: \(known.joined(separator: ", "))")
        }
        return t
    }

    static let runPeerTier: Command.Body = { opts, console in
        let json = opts[.json]
        let (_, config) = try peerConfig(opts)
        let usage = usageText(["peer", "tier"])
        guard let name = opts.next(), let tierText = opts.next() else { throw CLIError.usage(usage) }
        try opts.finish()
        let tier = try configuredTier(tierText, config, what: "tier")
        let peer = try configuredPeer(name, config)
        let before: PeerTier
        let applied: String
        switch askDaemonForTier(config, name, tier) {
        case .error(let e):
            throw e
        case .applied(let r):
            before = r.previous
            applied = r.stored ? "now" : "now; not yet in the store (tunneld retries)"
        case .notRunning:
            let store = try CLIStore.write(config)
            before = try WindowSource.open(config, local: false, localOption: false).tier(of: peer)
            let now = cliNow()
            // With a shared store, there too: every gateway (and every tunnelctl reading it)
            // answers with the override, as when tunneld sets it.
            let iface = config.interface
            if iface.store.isShared {
                do {
                    try iface.store.backend(local: store, gateway: iface.gatewayNameInForce, passFile: iface.storePassFile)?
                        .setTier(peer: name, tier: tier, at: now)
                } catch {
                    throw CLIError.failure("cannot write the tier to the shared store \(iface.store.text): \(error); nothing changed")
                }
            }
            try CLIStore.call { try store.setTier(peer: name, tier: tier, at: now) }
            applied = "at tunneld's next start"
        }
        if json {
            console.print(try encodeJSON(PeerTierJSON(peer: name, tier: tier, previous: before,
                                                      inForce: applied.hasPrefix("now"))))
            return .ok
        }
        console.print("\(name): tier \(tier.rawValue)" + (before.rawValue == tier.rawValue ? " (unchanged)" : " (was \(before.rawValue))")
            + "; in force \(applied)")
        return .ok
    }

    enum TierAnswerResult {
        case applied(PeerTierReply)
        case notRunning
        case error(CLIError)
    }

    /// Asks a running tunneld to change the tier. Not running (no socket, nobody listening) is an
    /// answer; any other failure (permission, timeout, an older tunneld) is an error: tunnelctl
    /// must not write the store behind a running daemon's back.
    static func askDaemonForTier(_ config: TunnelConfig, _ name: String, _ tier: PeerTier) -> TierAnswerResult {
        let client = ControlClient(socketPath: config.interface.controlSocketPath)
        let reply: ControlResponse
        do {
            reply = try client.send(.peerTier(peer: name, tier: tier))
        } catch {
            if case .daemonNotRunning = error { return .notRunning }
            return .error(CLIError.failure("cannot ask tunneld to change the tier: \(error); nothing changed"))
        }
        switch reply {
        case .peerTier(let r): return .applied(r)
        case .error(let e) where e.code == .unknownRequest:
            return .error(CLIError.failure("tunneld is older than this tunnelctl and cannot change tiers at runtime; "
                + "restart it with the new version, or stop it and run this again"))
        case .error(let e): return .error(CLIError.failure(e.message))
        default: return .error(unexpected(reply))
        }
    }
}
