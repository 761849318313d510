import Core

extension SharedStoreSetting {
    /// Opens the shared state this setting names — the one place both binaries do it (tunneld for
    /// its sync threads, tunnelctl for the history commands). Nil for `Store = local`.
    ///
    /// `readOnly` (tunnelctl): never creates, never migrates, and refuses a schema of another
    /// version; PostgreSQL sessions are also set `default_transaction_read_only`.
    public func open(passFile: String?, readOnly: Bool = false, timeoutMs: Int = 5_000) throws -> (any SharedState)? {
        switch self {
        case .local:
            return nil
        case .sqlite(let path):
            return try SQLiteSharedState(path: path, mode: readOnly ? .readOnly : .readWrite, busyTimeoutMs: timeoutMs)
        case .postgresql:
            let conninfo = self.conninfo(passFile: passFile)!
            return readOnly ? try PostgresSharedState(readingOnly: conninfo, timeoutMs: timeoutMs)
                : try PostgresSharedState(conninfo: conninfo, timeoutMs: timeoutMs)
        }
    }
}
