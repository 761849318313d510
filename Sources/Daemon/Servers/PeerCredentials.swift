import Core
/// Who is on the other end of a Unix socket connection, as the kernel reports it with
/// `SO_PEERCRED` (socket(7)): the process id and effective user and group at `connect` time.
public struct PeerCredentials: Hashable, Sendable {
    /// The connecting process.
    public var pid: Int32
    /// Its effective user id.
    public var uid: UInt32
    /// Its effective (primary) group id; supplementary groups are not reported by the kernel.
    public var gid: UInt32

    /// Credentials from their parts.
    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }
}
