import Core
import Control
import Foundation
import Store

/// `tunnelctl peer tier NAME free|premium` (DESIGN.md §6.5): writes the override to the store;
/// the daemon picks it up on its next watchdog tick (no restart). Moving to premium deletes the
/// window in the same transaction, so a paused peer gets in at once.
extension Tunnelctl {
    static let runPeer: Command.Body = { args, console in
        let usage = usageText(["peer", "tier"])
        let json = args.flag("--json")
        let config = try cliConfig(&args)
        guard let sub = args.next() else { throw CLIError.usage(usage) }
        guard sub == "tier" else { throw CLIError.usage("unknown subcommand '\(sub)'\(DidYouMean.suffix(sub, ["tier"]))\n\(usage)") }
        guard let name = args.next(), let tierText = args.next() else { throw CLIError.usage(usage) }
        try args.finish()
        guard let tier = PeerTier(rawValue: tierText) else {
            throw CLIError.usage("tier '\(tierText)' is neither free nor premium\n\(usage)")
        }
        let peer = try configuredPeer(name, config)
        let store: StateStore
        do {
            store = try StateStore(path: config.interface.storePath)
        } catch let e as StoreError {
            throw CLIError.failure(e.description)
        }
        let before = try Tunnelctl.tier(of: peer, store)
        let hadWindow = try store.window(peer: name) != nil
        try store.setTier(peer: name, tier: tier, at: cliNow())
        if json {
            console.print(try encodeJSON(PeerTierJSON(peer: name, tier: tier, previous: before, windowRemoved: tier == .premium && hadWindow)))
            return .ok
        }
        var line = "\(name): tier \(tier.rawValue)" + (before.rawValue == tier.rawValue ? " (unchanged)" : " (was \(before.rawValue))")
        if tier == .premium && hadWindow { line += "; its window is removed" }
        console.print(line + "; tunneld applies it within WatchdogInterval (\(remainingText(Int64(config.interface.watchdogInterval.components.seconds))))")
        return .ok
    }
}
