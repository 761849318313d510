import Core
import Runtime
#if canImport(Glibc)
import Glibc
#endif

extension TunnelConfig {
    /// The largest config file read (16 MiB: 10,000 peers take about 1.3 MB; anything near the
    /// limit is not a config file).
    public static let maximumFileSize = 16 << 20

    /// Reads and parses the config file at `path`, then reads a `PrivateKeyFile` if one is named,
    /// refusing it when group or others have any access to it (tunneld.conf(5)).
    ///
    /// Relative paths inside the file (`PrivateKeyFile`, the directories) are resolved against the
    /// config file's directory, so a test or demo can keep everything in one temporary directory.
    /// `tunnelctl`, which only needs the paths, passes `readingPrivateKey: false`: the key file is
    /// then neither read nor checked and `interface.privateKey` stays nil.
    /// - Throws: `ConfigErrors` naming the file, line and key of each problem.
    public static func load(path: String, readingPrivateKey: Bool = true) throws(ConfigErrors) -> TunnelConfig {
        let bytes: [UInt8]
        switch readSmallFile(path, limit: maximumFileSize) {
        case .success(let b): bytes = b
        case .failure(let e):
            throw ConfigErrors([ConfigError(file: path, line: 0, key: nil, message: e.message, hint: e.hint)])
        }
        let base: String = {
            guard let slash = path.lastIndex(of: "/") else { return "." }
            return slash == path.startIndex ? "/" : String(path[..<slash])
        }()
        var config = try parse(contents: bytes, file: path, baseDirectory: base)
        let text = String(decoding: bytes, as: UTF8.self)  // valid: parse checked it
        if readingPrivateKey, case .file(let keyPath) = config.interface.privateKeySource {
            let line = keyFileLine(text)
            switch readPrivateKeyFile(keyPath) {
            case .success(let key): config.interface.privateKey = key
            case .failure(let p):
                throw ConfigErrors([ConfigError(file: path, line: line, key: "PrivateKeyFile", message: p.message, hint: p.hint)])
            }
        }
        // wg-quick warns about a world-accessible file holding a key; so do we (the key is inline).
        if config.interface.privateKeySource == .inline, config.interface.privateKey != nil,
           let st = Sys.statIfPresent(path), st.st_mode & 0o007 != 0
        {
            config.warnings.append(ConfigError(
                file: path, line: keyLine(text, "privatekey"), key: "PrivateKey",
                message: "the file holds the private key and is accessible to all users (mode \(String(st.st_mode & 0o777, radix: 8)))",
                hint: "chmod 600 \(path), or move the key to a PrivateKeyFile of mode 0600"))
        }
        return config
    }

    /// Line of the `PrivateKeyFile` key (for error messages), 0 if not found.
    static func keyFileLine(_ text: String) -> Int { keyLine(text, "privatekeyfile") }

    /// Line of the first `key =` (lower-cased `key`), 0 if not found.
    static func keyLine(_ text: String, _ key: String) -> Int {
        var n = 0
        for raw in text.split(omittingEmptySubsequences: false, whereSeparator: { $0.isNewline }) {
            n += 1
            let l = raw.trimmedSpaces().lowercased()
            if l.hasPrefix(key), l.dropFirst(key.count).trimmedSpaces().hasPrefix("=") { return n }
        }
        return 0
    }

    /// Reads a private key file: a regular file, mode without group/other bits, holding one base64
    /// key (surrounding whitespace ignored).
    static func readPrivateKeyFile(_ path: String) -> Result<WireGuardKey, ValueError> {
        let st: stat
        do {
            st = try Sys.stat(path)
        } catch {
            return .failure(ValueError(
                "cannot read '\(path)': \(error.errnoText)",
                hint: error.errno == ENOENT ? "create it with: umask 077; wg genkey > \(path)" : nil))
        }
        guard st.st_mode & S_IFMT == S_IFREG else {
            return .failure(ValueError("'\(path)' is not a regular file", hint: "point it at the file `wg genkey` wrote"))
        }
        let mode = st.st_mode & 0o7777
        if mode & 0o077 != 0 {
            let octal = String(mode, radix: 8)
            return .failure(ValueError(
                "'\(path)' has mode 0\(octal), so group or others can access the private key",
                hint: "run: chmod 600 \(path)"))
        }
        switch readSmallFile(path, limit: 4096) {
        case .failure(let e): return .failure(e)
        case .success(let bytes):
            let text = String(decoding: bytes, as: UTF8.self).trimmedSpaces()
            guard let key = WireGuardKey(base64: text) else {
                return .failure(ValueError(
                    "'\(path)' does not hold a key (base64 of 32 bytes)",
                    hint: "write one with: umask 077; wg genkey > \(path)"))
            }
            return .success(key)
        }
    }

    /// Whole file contents, at most `limit` bytes (more is an error).
    static func readSmallFile(_ path: String, limit: Int) -> Result<[UInt8], ValueError> {
        let fd: Int32
        do {
            fd = try Sys.open(path, O_RDONLY | O_CLOEXEC)
        } catch {
            let e = error.errno
            return .failure(ValueError(
                "cannot read: \(error.errnoText)",
                hint: e == EACCES ? "run as root or fix the file's permissions" : (e == ENOENT ? "check the path (--config PATH)" : nil)))
        }
        defer { Sys.close(fd) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n: Int
            switch buffer.withUnsafeMutableBytes({ p in Result { () throws(SystemError) in try Sys.read(fd, p, path) } }) {
            case .success(let r): n = r
            case .failure(let e): return .failure(ValueError("cannot read: \(e.errnoText)", hint: nil))
            }
            if n == 0 { break }
            out.append(contentsOf: buffer[0..<n])
            if out.count > limit {
                return .failure(ValueError("file is larger than \(limit) bytes", hint: "is this the right file?"))
            }
        }
        return .success(out)
    }
}
