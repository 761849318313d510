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

/// `Disabled` / `Expires` with a shared store: the latest change made on any gateway
/// applies on all, over each gateway's own config. `explain PEER`, `peer list|show` and `peer
/// disable|enable` answer with that, never with this config alone — a shared store that cannot
/// be read is an error, not the config's answer.
extension Tunnelctl {
    /// The shared store's admission rows by peer; nil with `Store = local`.
    static func sharedAdmissions(_ config: TunnelConfig) throws -> [String: SharedAdmission]? {
        let setting = config.interface.store
        guard setting.isShared else { return nil }
        do {
            let shared = try setting.open(passFile: config.interface.storePassFile, readOnly: true)!
            var out: [String: SharedAdmission] = [:]
            for a in try shared.admissions(changedAfter: 0).changes { out[a.peer] = a }
            return out
        } catch {
            throw CLIError.failure("cannot read the shared store \(setting.text): \(error)\n"
                + "  a Disabled or Expires change made on another gateway would be there; this configuration alone may be out of date")
        }
    }

    /// `p` as every gateway admits it: the shared row's Disabled and Expires when there is one
    /// (returned too, to say where it came from), else the config's.
    static func admitted(_ p: PeerConfig, _ shared: [String: SharedAdmission]?) -> (peer: PeerConfig, from: SharedAdmission?) {
        guard let a = shared?[p.name] else { return (p, nil) }
        var q = p
        q.disabled = a.disabled
        q.expiresMs = a.expiresAt
        return (q, a)
    }

    /// `peer disable|enable NAME`: the config edited and reloaded when it says otherwise, and with
    /// a shared store the change written there too, so every gateway applies it even when this
    /// config already said so (another gateway had changed it) or tunneld is not running here.
    static func setDisabled(_ name: String, _ disable: Bool, _ configPath: String, _ config: TunnelConfig,
                            _ console: Console) throws -> ExitCode {
        let verb = disable ? "disabled" : "enabled"
        let peer = try configuredPeer(name, config)
        let shared = try sharedAdmissions(config)
        let (effective, from) = admitted(peer, shared)
        if effective.disabled == disable && peer.disabled == disable {
            console.print("\(name): already \(verb)\(from.map { " (on \($0.gateway), shared store)" } ?? "")")
            return .ok
        }
        var code = ExitCode.ok
        if peer.disabled != disable {
            try editConfig(configPath) { text throws(ValueError) in
                try ConfigRewriter.setKey(text, peer: name, key: "Disabled", value: disable ? "true" : nil)
            }
            console.print("\(name): \(verb) in \(configPath)")
            code = try reloadAfterEdit(config, console)
        }
        guard config.interface.store.isShared else { return code }
        do {
            let store = try config.interface.store.open(passFile: config.interface.storePassFile)!
            try store.setAdmission(SharedAdmission(peer: name, disabled: disable, expiresAt: effective.expiresMs, changedAt: cliNow(),
                                                   gateway: config.interface.gatewayNameInForce))
            console.print("\(name): \(verb) on every gateway of the shared store \(config.interface.store.backendName)")
        } catch {
            throw CLIError.failure("\(name): the shared store \(config.interface.store.text) did not take the change: \(error)"
                + (peer.disabled != disable ? "; tunneld here shares it once the store is back" : "; nothing changed, try again"))
        }
        return code
    }
}
