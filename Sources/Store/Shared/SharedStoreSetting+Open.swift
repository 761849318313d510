import Core

extension SharedStoreSetting {
    /// Opens the shared state this setting names — the one place both binaries do it (tunneld for
    /// its sync threads, tunnelctl for the history commands). Nil for `Store = local` (see
    /// `backend`, which answers for every setting).
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

    /// The store protocol for this setting, whatever it names: `Store = local` is this router's
    /// own store (`local`, as `LocalSharedState` for `gateway`; nil when it does not exist yet),
    /// a shared setting is `open`'s. Callers that answer from "the store" use this and ask the
    /// same questions of every backend.
    public func backend(local: StateStore?, gateway: String, passFile: String?, readOnly: Bool = false,
                        timeoutMs: Int = 5_000) throws -> (any SharedState)? {
        if case .local = self { return local.map { LocalSharedState(store: $0, gateway: gateway) } }
        return try open(passFile: passFile, readOnly: readOnly, timeoutMs: timeoutMs)
    }
}
