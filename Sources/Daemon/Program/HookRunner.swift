import Config
import Runtime

/// Runs wg-quick's `PreUp`/`PostUp`/`PreDown`/`PostDown` lines for tunneld (docs/peers.md): each
/// through `/bin/sh -c` with `%i` replaced, in file order, its output logged line by line at info
/// (`PostUp: …`). A failing `PreUp`/`PostUp` line stops there and is returned as the reason not
/// to start; a failing `PreDown`/`PostDown` line is logged and the next one runs (tear-down goes on).
enum HookRunner {
    /// Runs `hook`'s commands; returns the error that must stop the start, if any.
    static func run(_ hook: InterfaceHook, _ interface: InterfaceConfig, name: String, configPath: String, log: Logger) -> String? {
        for command in interface.commands(of: hook, interface: name) {
            log.info("\(hook.rawValue): running \(command)")
            let result: ShellResult
            do {
                result = try Sys.runShell(command)
            } catch {
                let message = "\(configPath): \(hook.rawValue) '\(command)': \(error)"
                if hook.isFatal { return message }
                log.warning(message)
                continue
            }
            for line in result.output { log.info("\(hook.rawValue): \(line)") }
            guard result.succeeded else {
                let message = "\(configPath): \(hook.rawValue) '\(command)' failed (\(result.outcome))"
                if hook.isFatal {
                    return message + "; tunneld does not start (like wg-quick). Fix or remove the line; its output is logged above"
                }
                log.warning(message + "; going on with the tear-down")
                continue
            }
        }
        return nil
    }
}
