import Core
/// A `host @PATH` list (docs/policy.md): one name or `*.name` per line, or hosts-file
/// lines (`0.0.0.0 ads.example.com [more names]`, the format of the popular block lists), with
/// `#` comments and blank lines. Names go through `HostNameText` like names written in rules.
/// Hosts-file entries for the machine itself (`localhost`, `ip6-localhost`, …) are skipped.
enum HostList {
    /// At most this many errors are reported per list; the rest are summed up in one line.
    static let maxErrors = 20

    /// Names the hosts-file format uses for the local machine, skipped.
    static let localNames: Set<String> = [
        "localhost", "localhost.localdomain", "local", "broadcasthost", "ip6-localhost", "ip6-loopback",
        "ip6-localnet", "ip6-mcastprefix", "ip6-allnodes", "ip6-allrouters", "ip6-allhosts", "0.0.0.0",
    ]

    static func isHexLetter(_ c: UInt8) -> Bool { (c | 0x20) >= 0x61 && (c | 0x20) <= 0x66 }

    /// An IPv4 or IPv6 address, an IPv6 one possibly with a zone (`fe80::1%lo0`, as macOS
    /// hosts files have).
    static func isAddress(_ s: Substring) -> Bool {
        let address = s.firstIndex(of: "%").map { s[..<$0] } ?? s
        return IPAddress(address) != nil && (address.contains(":") || address.first?.isNumber == true)
    }

    /// The patterns of a list file's bytes, and its problems located at `file:line:column`.
    static func parse(_ bytes: [UInt8], file: String) -> (patterns: [HostPattern], diagnostics: [PolicyDiagnostic]) {
        var patterns: [HostPattern] = []
        var diagnostics: [PolicyDiagnostic] = []
        var errors = 0
        func fail(_ line: Int, _ column: Int, _ message: String) {
            errors += 1
            if errors <= maxErrors {
                diagnostics.append(PolicyDiagnostic(.error, SourceLocation(file: file, line: line, column: column), message))
            }
        }
        bytes.withUnsafeBufferPointer { b in
            let n = b.count
            var lineNo = 0
            // A UTF-8 byte order mark (lists saved on Windows) is not part of the first name.
            var start = n >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF ? 3 : 0
            while start < n {
                lineNo += 1
                var end = start
                while end < n && b[end] != 10 { end += 1 }
                var codeEnd = start
                while codeEnd < end && b[codeEnd] != UInt8(ascii: "#") { codeEnd += 1 }
                // Words of the line.
                var words: [(Int, Int)] = []
                var i = start
                while i < codeEnd {
                    while i < codeEnd && (b[i] == 32 || b[i] == 9 || b[i] == 13) { i += 1 }
                    let w = i
                    while i < codeEnd && !(b[i] == 32 || b[i] == 9 || b[i] == 13) { i += 1 }
                    if i > w { words.append((w, i)) }
                }
                defer { start = end + 1 }
                guard let first = words.first else { continue }
                func text(_ w: (Int, Int)) -> Substring {
                    Substring(String(decoding: UnsafeBufferPointer(rebasing: b[w.0..<w.1]), as: UTF8.self))
                }
                var names = words[...]
                var hostsFormat = false
                let c0 = b[first.0]
                if (c0 >= 0x30 && c0 <= 0x39) || c0 == UInt8(ascii: ":") || isHexLetter(c0), isAddress(text(first)) {
                    names = words.dropFirst()
                    hostsFormat = true
                    if names.isEmpty {
                        fail(lineNo, first.1 - start + 1, "an address without a name; hosts-file lines are 'ADDRESS NAME [NAME…]'")
                        continue
                    }
                } else if words.count > 1 {
                    fail(lineNo, words[1].0 - start + 1, "one name per line (or hosts-file lines 'ADDRESS NAME'); found '\(text(words[1]))' after '\(text(first))'")
                    continue
                }
                for w in names {
                    let t = text(w)
                    if hostsFormat && localNames.contains(t.lowercased()) { continue }
                    switch PolicyParser.hostPattern(t) {
                    case .success(let p): patterns.append(p)
                    case .failure(let e): fail(lineNo, w.0 - start + 1, e.message)
                    }
                }
            }
        }
        if errors > maxErrors {
            diagnostics.append(PolicyDiagnostic(.error, SourceLocation(file: file, line: 0, column: 0),
                "\(errors - maxErrors) more bad lines not shown (\(errors) in all)"))
        }
        return (patterns, diagnostics)
    }
}

/// Loads the lists a policy names, each file once however many rules use it.
final class HostListLoader {
    let reader: HostListReader
    private var loaded: [String: [HostPattern]] = [:]
    /// Problems inside list files (their own `file:line`), in the order found.
    private(set) var diagnostics: [PolicyDiagnostic] = []

    init(reader: HostListReader) { self.reader = reader }

    /// The patterns of the list at `path` (relative paths are taken from the directory of the
    /// rule file `ruleFile`), or a one-line reason when the file cannot be read.
    func patterns(_ path: String, ruleFile: String) -> Result<[HostPattern], HostNameError> {
        var full = path
        if !path.hasPrefix("/"), let slash = ruleFile.lastIndex(of: "/") {
            full = String(ruleFile[...slash]) + path
        }
        if let p = loaded[full] { return .success(p) }
        let bytes: [UInt8]
        switch reader.read(full) {
        case .failure(let e): return .failure(HostNameError(message: "cannot read the host list \(full): \(e.message)"))
        case .success(let b): bytes = b
        }
        guard String(validating: bytes, as: UTF8.self) != nil else {
            return .failure(HostNameError(message: "the host list \(full) is not UTF-8 text"))
        }
        let (patterns, problems) = HostList.parse(bytes, file: full)
        diagnostics += problems
        if patterns.isEmpty && problems.isEmpty {
            diagnostics.append(PolicyDiagnostic(.warning, SourceLocation(file: full, line: 0, column: 0),
                "the host list names no host; rules using it never match"))
        }
        loaded[full] = patterns
        return .success(patterns)
    }
}
