import ControlProtocol
import Core
import Runtime
#if canImport(Glibc)
import Glibc
#endif

/// The servers' side of `SocketIO`: creating a listening socket and asking who connected.
extension SocketIO {
    /// Creates a listening socket at `path` with mode `mode` (and group `gid` when given).
    ///
    /// An existing file at `path` is handled like this: a socket nobody accepts on (connect gives
    /// `ECONNREFUSED`) is stale and removed; a socket somebody is listening on is an error
    /// ("already in use"); anything that is not a socket is never removed (error).
    /// The socket's inode is fchmod'ed to 0600 before `bind` (Linux creates the file with the
    /// socket inode's mode less the umask, so it is never more open than 0600, even briefly),
    /// then the file is chmod'ed to `mode`. The process umask is left alone: changing it would
    /// race with files other threads create.
    static func listen(path: String, mode: mode_t, gid: UInt32?, backlog: Int32 = 16) throws(SocketError) -> Int32 {
        guard let addr = address(path) else { throw .pathTooLong(path: path) }
        if let st = try? Sys.lstat(path) {
            guard st.st_mode & S_IFMT == S_IFSOCK else { throw .notASocket(path: path) }
            switch Result(catching: { () throws(SystemError) in try connect(path: path) }) {
            case .success(let fd):
                Sys.close(fd)
                throw .inUse(path: path)
            case .failure(let e) where e.errno == ECONNREFUSED || e.errno == ENOENT:
                try? Sys.unlinkIfPresent(path)  // stale: left behind by a process that died
            case .failure(let e):
                throw .system(e)
            }
        }
        let fd: Int32
        do { fd = try streamSocket(path) } catch { throw .system(error) }
        try? Sys.fchmod(fd, 0o600, path)
        do {
            try Sys.bind(fd, addr, path)
        } catch {
            Sys.close(fd)
            throw .system(error)
        }
        do {
            if let gid { try Sys.chgrp(path, gid) }
            try Sys.chmod(path, mode)
            try Sys.listen(fd, backlog: backlog, path)
        } catch {
            Sys.close(fd)
            try? Sys.unlinkIfPresent(path)
            throw .system(error)
        }
        return fd
    }

    /// The `SO_PEERCRED` credentials of a connected socket, or nil.
    static func peerCredentials(_ fd: Int32) -> PeerCredentials? {
        // struct ucred { pid_t pid; uid_t uid; gid_t gid; } (socket(7)); declared here because
        // Glibc exposes it only under _GNU_SOURCE.
        var raw: (Int32, UInt32, UInt32) = (0, 0, 0)
        var len = socklen_t(MemoryLayout<(Int32, UInt32, UInt32)>.size)
        guard (try? Sys.call("getsockopt(SO_PEERCRED)") { getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &raw, &len) }) != nil,
              len == 12 else { return nil }
        return PeerCredentials(pid: raw.0, uid: raw.1, gid: raw.2)
    }
}
