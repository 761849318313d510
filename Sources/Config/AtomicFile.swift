import Core
import Glibc
import Runtime

/// Replaces a file so that a reader (or a crash) sees the old contents or the new, never a mix:
/// write a temporary file in the same directory, fsync it, give it the old file's mode
/// and owner, rename it over the old one, fsync the directory. A failure at any step before the
/// rename leaves the old file untouched and removes the temporary file.
public enum AtomicFile {
    /// Writes `contents` to `path`. `beforeRename` runs after the temporary file is complete and
    /// synced, right before the rename (tests inject a failure there). A new file gets `newMode`.
    public static func replace(_ path: String, contents: [UInt8], newMode: mode_t = 0o600,
                               beforeRename: () throws(SystemError) -> Void = {}) throws(SystemError) {
        let (dir, temp) = temporary(for: path, tag: "tmp")
        let old = Sys.statIfPresent(path)
        try writeSynced(temp, contents) { fd throws(SystemError) in
            if let old {
                if old.st_uid != geteuid() || old.st_gid != getegid() {
                    _ = try Sys.call("fchown(\(temp))") { fchown(fd, old.st_uid, old.st_gid) }
                }
                try Sys.fchmod(fd, old.st_mode & 0o7777, temp)
            } else {
                try Sys.fchmod(fd, newMode, temp)
            }
        }
        do throws(SystemError) {
            try beforeRename()
            try Sys.rename(temp, path)
        } catch {
            try? Sys.unlinkIfPresent(temp)
            throw error
        }
        try syncDirectory(dir)
    }

    /// Writes `contents` to `path` with `mode`, which must not exist: the complete, synced file
    /// appears at once (`link(2)` of a temporary file, which fails with `EEXIST` rather than
    /// replace anything), or nothing does. For files that are never overwritten (`tunnelctl
    /// init`'s key and configuration).
    public static func create(_ path: String, contents: [UInt8], mode: mode_t) throws(SystemError) {
        let (dir, temp) = temporary(for: path, tag: "new")
        try writeSynced(temp, contents) { fd throws(SystemError) in try Sys.fchmod(fd, mode, temp) }
        defer { try? Sys.unlinkIfPresent(temp) }
        _ = try Sys.call("link(\(path))") { link(temp, path) }
        try syncDirectory(dir)
    }

    /// The directory of `path` and a temporary file beside it (`.NAME.TAG-PID`).
    private static func temporary(for path: String, tag: String) -> (dir: String, temp: String) {
        let slash = path.lastIndex(of: "/")
        let dir = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let base = slash.map { String(path[path.index(after: $0)...]) } ?? path
        return (dir, (dir == "/" ? "" : dir) + "/.\(base).\(tag)-\(getpid())")
    }

    /// Creates `temp` afresh with `contents`, lets `setMode` give it its mode (and owner), and
    /// fsyncs it; on any failure the temporary file is removed.
    private static func writeSynced(_ temp: String, _ contents: [UInt8],
                                    setMode: (Int32) throws(SystemError) -> Void) throws(SystemError) {
        try Sys.unlinkIfPresent(temp)
        let fd = try Sys.open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode: 0o600)
        do throws(SystemError) {
            defer { close(fd) }
            var failure: SystemError?
            contents.withUnsafeBytes { b in
                do throws(SystemError) { try Sys.writeAll(fd, b, temp) } catch { failure = error }
            }
            if let failure { throw failure }
            try setMode(fd)
            _ = try Sys.call("fsync(\(temp))") { fsync(fd) }
        } catch {
            try? Sys.unlinkIfPresent(temp)
            throw error
        }
    }

    private static func syncDirectory(_ dir: String) throws(SystemError) {
        let dfd = try Sys.open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { close(dfd) }
        _ = try Sys.call("fsync(\(dir))") { fsync(dfd) }
    }
}
