/// `tunnelctl completion bash|zsh`: the completion scripts generated from the command table
/// (`CompletionScript`). Reads no configuration, store or daemon.
extension Tunnelctl {
    static let runCompletion: Command.Body = { args, console in
        let sub = args.next()
        try args.finish()
        switch sub {
        case "bash": console.print(CompletionScript.bash(), terminator: "")
        case "zsh": console.print(CompletionScript.zsh(), terminator: "")
        default: throw CLIError.usage(usageText(["completion"]))
        }
        return .ok
    }
}
