import Core
import Glibc
import Synchronization

/// The system's time zones: TZif files under `TZDIR` (default `/usr/share/zoneinfo`, Debian's
/// tzdata), `/etc/localtime`, the `TZ` variable. Loaded zones are cached for the process (a zone
/// file does not change under a running command; tunneld re-reads nothing here either).
extension Zone {
    /// The zone named `name` (`Europe/Paris`, `UTC`), or nil when the name is not a zone the
    /// system has (no such file, not a TZif file, or not a plain relative name).
    public static func named(_ name: String) -> Zone? {
        if utcNames.contains(name) { return Zone(identifier: name, secondsEastOfUTC: 0) }
        guard isZoneName(name) else { return nil }
        return cached("name:" + name) { load(identifier: name, path: zoneDirectory + "/" + name) }
    }

    /// The process's zone, as `date` finds it: `TZ` (a zone name, `:NAME`, or a POSIX rule such as
    /// `CET-1CEST,M3.5.0,M10.5.0/3`), else `/etc/localtime` (named after the file it links to),
    /// else UTC.
    public static var system: Zone {
        let tz = getenv("TZ").map { String(cString: $0) }
        return cachedAlways("system:" + (tz ?? "")) {
            if let tz, !tz.isEmpty {
                let name = tz.hasPrefix(":") ? String(tz.dropFirst()) : tz
                if let z = named(name) { return z }
                if name.hasPrefix("/"), let z = load(identifier: name, path: name) { return z }
                if let z = try? Zone(identifier: tz, posixRule: tz) { return z }
            }
            let name = localtimeTarget().flatMap(afterZoneinfo) ?? "localtime"
            if utcNames.contains(name) { return Zone(identifier: name, secondsEastOfUTC: 0) }
            return load(identifier: name, path: "/etc/localtime") ?? .utc
        }
    }

    /// Where zone files are: `TZDIR` when set (as for glibc), else `/usr/share/zoneinfo`.
    static var zoneDirectory: String {
        getenv("TZDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/share/zoneinfo"
    }

    /// A relative path of letters, digits, `_`, `+`, `-`, `/` without `.` parts (no way out of TZDIR).
    static func isZoneName(_ name: String) -> Bool {
        !name.isEmpty && !name.hasPrefix("/") && name.utf8.count <= 255
            && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "_+-/".contains($0)) }
            && !name.split(separator: "/", omittingEmptySubsequences: false).contains { $0.isEmpty }
    }

    private static func load(identifier: String, path: String) -> Zone? {
        guard let bytes = try? Sys.readFile(path, limit: 1 << 20) else { return nil }
        return try? Zone(identifier: identifier, tzif: bytes)
    }

    private static func localtimeTarget() -> String? {
        var buf = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/etc/localtime", &buf, Int(PATH_MAX))
        guard n > 0 else { return nil }
        return String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static let cache = Mutex<[String: Zone?]>([:])

    private static func cached(_ key: String, _ make: () -> Zone?) -> Zone? {
        if let hit = cache.withLock({ $0[key] }) { return hit }
        let z = make()
        cache.withLock { $0[key] = .some(z) }
        return z
    }

    private static func cachedAlways(_ key: String, _ make: () -> Zone) -> Zone {
        cached(key) { Optional(make()) }!
    }

    /// `Europe/Paris` from `/usr/share/zoneinfo/Europe/Paris` (or `../usr/share/zoneinfo/…`).
    private static func afterZoneinfo(_ path: String) -> String? {
        let marker = Array("zoneinfo/".utf8), b = Array(path.utf8)
        guard b.count > marker.count else { return nil }
        for i in 0...(b.count - marker.count) where b[i..<(i + marker.count)].elementsEqual(marker) {
            return String(decoding: b[(i + marker.count)...], as: UTF8.self)
        }
        return nil
    }
}

extension TimeText {
    /// The zone text output is written in: `TUNNELCTL_TZ` (a zone name; tests and "what does
    /// alice see in her zone") when set and known, else the process's (``Zone/system``).
    public static var displayZone: Zone {
        getenv("TUNNELCTL_TZ").flatMap { Zone.named(String(cString: $0)) } ?? Zone.system
    }
}
