import Core
import Glibc

/// How a shell command ended (``Sys/runShell(_:)``).
public struct ShellResult: Sendable, Hashable {
    /// The exit status, or nil when a signal ended it.
    public var exitStatus: Int32?
    /// The signal that ended it, if one did.
    public var signal: Int32?
    /// What it wrote to stdout and stderr (interleaved as written), split into lines.
    public var output: [String]

    /// Exit status 0.
    public var succeeded: Bool { exitStatus == 0 }

    /// `exit status N` or `killed by signal N`.
    public var outcome: String {
        if let s = exitStatus { return "exit status \(s)" }
        return "killed by signal \(signal ?? 0)"
    }
}

extension Sys {
    /// Runs `command` through `/bin/sh -c` (as wg-quick runs its hooks) and waits for it: stdin
    /// from /dev/null, stdout and stderr into one pipe read to the end, the signal mask emptied and
    /// every signal at its default in the child (tunneld blocks the signals it waits for, and a
    /// child would inherit that). Output beyond `outputLimit` bytes is read and dropped.
    public static func runShell(_ command: String, outputLimit: Int = 1 << 16) throws(SystemError) -> ShellResult {
        var fds: [Int32] = [-1, -1]
        _ = try call("pipe") { pipe(&fds) }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 2)
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attr, &empty)
        posix_spawnattr_setsigdefault(&attr, &all)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("sh"), strdup("-c"), strdup(command), nil]
        defer { for a in argv { free(a) } }
        let rc = posix_spawn(&pid, "/bin/sh", &actions, &attr, argv, environ)
        close(fds[1])
        guard rc == 0 else {
            close(fds[0])
            try fail("posix_spawn(/bin/sh -c \(command))", rc)
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { b in Glibc.read(fds[0], b.baseAddress, b.count) }
            if n < 0 && Glibc.errno == EINTR { continue }
            if n <= 0 { break }
            if bytes.count < outputLimit { bytes += chunk[0..<min(n, outputLimit - bytes.count)] }
        }
        close(fds[0])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            if Glibc.errno != EINTR { try fail("waitpid(\(pid))", Glibc.errno) }
        }
        var lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        let exited = status & 0x7f == 0
        return ShellResult(exitStatus: exited ? (status >> 8) & 0xff : nil, signal: exited ? nil : status & 0x7f, output: lines)
    }
}
