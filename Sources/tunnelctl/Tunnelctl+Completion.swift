/// `tunnelctl completion bash|zsh`: the completion scripts generated from the command table
/// (`CompletionScript`). Reads no configuration, store or daemon.
extension Tunnelctl {
    static let runCompletionBash: Command.Body = { opts, console in
        try opts.finish()
        console.print(CompletionScript.bash(), terminator: "")
        return .ok
    }

    static let runCompletionZsh: Command.Body = { opts, console in
        try opts.finish()
        console.print(CompletionScript.zsh(), terminator: "")
        return .ok
    }
}
