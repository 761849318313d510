import Glibc

/// The process's command-line arguments, program name first.
///
/// `CommandLine.arguments` comes from argc/argv that the Swift runtime captures in a constructor
/// of libswiftCore as it is loaded. Under an `LD_PRELOAD` library that runs code of its own first
/// (libfaketime, which the clock-step tests use to step a daemon's wall clock), that capture sees
/// argc 0 and every argument is lost — tunneld then fell back to the default config path. The
/// kernel's copy in `/proc/self/cmdline` is always there: it is read when the runtime's is empty.
public enum ProcessArguments {
    /// The arguments, program name first (empty only when both sources are).
    public static var current: [String] {
        let fromRuntime = CommandLine.arguments
        if !fromRuntime.isEmpty { return fromRuntime }
        return fromProcFile("/proc/self/cmdline") ?? []
    }

    /// The NUL-separated arguments of a `cmdline` file, or nil when it cannot be read.
    public static func fromProcFile(_ path: String) -> [String]? {
        guard let bytes = try? Sys.readFile(path) else { return nil }
        return parse(bytes)
    }

    /// Splits NUL-terminated strings (a trailing NUL is optional; empty arguments are kept).
    public static func parse(_ bytes: [UInt8]) -> [String] {
        var out: [String] = []
        var start = 0
        for (i, b) in bytes.enumerated() where b == 0 {
            out.append(String(decoding: bytes[start..<i], as: UTF8.self))
            start = i + 1
        }
        if start < bytes.count { out.append(String(decoding: bytes[start...], as: UTF8.self)) }
        return out
    }
}
