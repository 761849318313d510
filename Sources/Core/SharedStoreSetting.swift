#if canImport(Glibc)
import Glibc
#endif
/// `Store` in `[Interface]` (docs/scale-out.md): where the facts gateways share live.
public enum SharedStoreSetting: Hashable, Sendable {
    /// `Store = local` (the default): the SQLite `state.db` in `StateDirectory`, one router.
    case local
    /// `Store = postgresql://…` (or a libpq `key=value` string): one PostgreSQL database shared by
    /// every gateway that names it. Never holds a password (`StorePassFile` or `PGPASSFILE`).
    case postgresql(conninfo: String)
    /// `Store = sqlite:/path/shared.db`: one SQLite file shared by the gateways of one host
    /// (several tunneld instances on one router); the same schema and contract as PostgreSQL.
    case sqlite(path: String)

    /// A parse error: what is wrong and what to write.
    public struct Problem: Error, Hashable, Sendable {
        public var message: String
        public var hint: String?
    }

    /// `local` / `sqlite`, `sqlite:/absolute/path` (or `sqlite:///absolute/path`), a
    /// `postgresql://` or `postgres://` URL, or a libpq `key=value` string. A password in it is
    /// refused: the config file is readable by more than the database should be.
    public static func parse(_ text: String) -> Result<SharedStoreSetting, Problem> {
        let v = String(text.drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
        if ["local", "sqlite"].contains(v.lowercased()) { return .success(.local) }
        if v.lowercased().hasPrefix("sqlite:") {
            var path = String(v.dropFirst("sqlite:".count))
            if path.hasPrefix("///") { path.removeFirst(2) }
            guard path.hasPrefix("/"), path.count > 1, !path.hasSuffix("/") else {
                return .failure(Problem(message: "'\(v)' names no absolute file", hint: "write e.g. sqlite:/var/lib/tunnelvision/shared.db"))
            }
            return .success(.sqlite(path: path))
        }
        let noPassword = Problem(
            message: "holds a password", hint: "remove it; put it in a libpq password file named by StorePassFile (or PGPASSFILE)")
        let lower = v.lowercased()
        if lower.hasPrefix("postgresql://") || lower.hasPrefix("postgres://") {
            let rest = v[v.index(after: v.firstIndex(of: "/")!)...].dropFirst()
            let authority = rest.prefix { $0 != "/" && $0 != "?" }
            if let at = authority.lastIndex(of: "@"), authority[..<at].contains(":") { return .failure(noPassword) }
            if let q = v.firstIndex(of: "?") {
                for item in v[v.index(after: q)...].split(separator: "&") where item.lowercased().hasPrefix("password=") {
                    return .failure(noPassword)
                }
            }
            guard !authority.isEmpty || v.contains("host=") else {
                return .failure(Problem(message: "'\(v)' names no database server",
                                        hint: "write e.g. postgresql://tunnelvision@db.example/tunnelvision?sslmode=verify-full"))
            }
            return .success(.postgresql(conninfo: v))
        }
        if v.contains("=") {
            let keys = v.split(whereSeparator: { $0 == " " || $0 == "\t" }).compactMap { $0.split(separator: "=", maxSplits: 1).first }
            if keys.contains(where: { $0.lowercased() == "password" }) { return .failure(noPassword) }
            return .success(.postgresql(conninfo: v))
        }
        return .failure(Problem(message: "'\(v)' is not a store",
                                hint: "write local (the default), sqlite:/path/shared.db, or a PostgreSQL connection string such as postgresql://tunnelvision@db.example/tunnelvision"))
    }

    /// True for a valid `GatewayName`: 1–64 characters of `[A-Za-z0-9_.-]`.
    public static func isValidGatewayName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count) && name.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b == 0x5f || b == 0x2e || b == 0x2d
        }
    }

    /// `GatewayName`'s default: the host name, kept to the characters a gateway name allows
    /// (`gateway` when nothing is left). tunneld and tunnelctl both use it.
    public static func defaultGatewayName() -> String {
        var buf = [CChar](repeating: 0, count: 256)
        guard gethostname(&buf, buf.count) == 0 else { return "gateway" }
        let name = String(cString: buf).filter { isValidGatewayName(String($0)) }
        return name.isEmpty ? "gateway" : String(name.prefix(64))
    }

    /// The connection string with `StorePassFile` as libpq's `passfile` parameter, when given.
    public func conninfo(passFile: String?) -> String? {
        guard case .postgresql(let c) = self else { return nil }
        guard let passFile else { return c }
        var quoted = "'"
        for ch in passFile {
            if ch == "\\" || ch == "'" { quoted.append("\\") }
            quoted.append(ch)
        }
        quoted.append("'")
        if c.lowercased().hasPrefix("postgres") {
            let enc = passFile.utf8.map { b -> String in
                let ok = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b == 0x2f || b == 0x2e || b == 0x2d || b == 0x5f
                let hex = Array("0123456789ABCDEF")
                return ok ? String(UnicodeScalar(b)) : "%" + String(hex[Int(b >> 4)]) + String(hex[Int(b & 15)])
            }.joined()
            return c + (c.contains("?") ? "&" : "?") + "passfile=" + enc
        }
        return c + " passfile=" + quoted
    }

    /// The backend's name as `status` shows it: `local`, `sqlite` or `postgresql`.
    public var backendName: String {
        switch self {
        case .local: return "local"
        case .sqlite: return "sqlite"
        case .postgresql: return "postgresql"
        }
    }

    /// True when gateways share it (anything but `local`).
    public var isShared: Bool { self != .local }

    /// What `status` says: `local`, `sqlite:PATH` or the connection string (it holds no password).
    public var text: String {
        switch self {
        case .local: return "local"
        case .postgresql(let c): return c
        case .sqlite(let path): return "sqlite:" + path
        }
    }
}
