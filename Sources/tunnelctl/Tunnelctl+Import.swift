import Config
import Core
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Runtime

/// `tunnelctl import wg0.conf [-o tunneld.conf]`: a wg-quick server file as a
/// TunnelVision config. The text is kept as it is (comments, hooks, `DNS`); what changes is that
/// every peer named by a comment or by its key gets a `Name =` line, so the name survives edits.
/// The summary (stderr) lists the names and everything tunneld treats differently from wg-quick.
extension Tunnelctl {
    static let runImport: Command.Body = { opts, console in
        let output = opts[.output]
        guard let input = opts.next() else { throw CLIError.usage(usageText(["import"])) }
        try opts.finish()
        let data = try readConfigFile(input)
        let (text, summary) = try importText(String(decoding: data, as: UTF8.self), file: input)
        if let output {
            if Sys.exists(output) { throw CLIError.failure("\(output) exists; remove it first or pick another -o FILE (nothing written)") }
            do {
                try AtomicFile.replace(output, contents: Array(text.utf8), newMode: 0o600)
            } catch {
                throw CLIError.failure("cannot write \(output): \(error)")
            }
            console.print(summary + "\nwritten to \(output) (mode 0600: it holds the private key); check it with tunneld --check-config --config \(output)")
        } else {
            console.print(text, terminator: "")
            console.error(summary)
        }
        return .ok
    }

    /// The converted text and the summary. Pure (for the golden tests).
    static func importText(_ text: String, file: String) throws -> (String, String) {
        let config: TunnelConfig
        do { config = try TunnelConfig.parse(text, file: file) } catch {
            throw CLIError.failure("\(file) cannot be imported as it is:\n\(error)")
        }
        var out = text
        var lines = ["imported \(config.peers.count) peer(s) from \(file):"]
        for p in config.peers {
            switch p.nameOrigin {
            case .nameKey:
                lines.append("  \(p.name): Name kept")
            case .comment, .publicKey:
                do { out = try ConfigRewriter.renamePeer(out, from: p.name, to: p.name) } catch {
                    throw CLIError.failure("\(file): \(error)")
                }
                lines.append("  \(p.name): Name = \(p.name) added (" + (p.nameOrigin == .comment ? "from the comment above it" : "from its public key") + ")")
            }
        }
        for n in config.notes where n.key != "Name" { lines.append("note: \(n)") }
        for w in config.warnings { lines.append("warning: \(w)") }
        if config.interface.publicEndpoint == nil {
            lines.append("todo: add PublicEndpoint = HOST:PORT to [Interface] for 'tunnelctl peer add|config'")
        }
        if !(config.interface.preUp + config.interface.postUp + config.interface.preDown + config.interface.postDown).isEmpty {
            lines.append("todo: tunneld runs the PreUp/PostUp/PreDown/PostDown lines as root like wg-quick; remove the ones "
                + "tunneld makes unnecessary (it sets addresses and routes itself; scripts/router-nat.sh does NAT)")
        }
        return (out, lines.joined(separator: "\n"))
    }
}
