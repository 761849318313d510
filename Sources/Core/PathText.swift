/// Path arithmetic on text (no file system access), with the results Foundation's `NSString`
/// path methods give, so the binaries need no more than FoundationEssentials.
public enum PathText {
    /// The directory part: `/etc/tunnelvision` for `/etc/tunnelvision/tunneld.conf`, `/` for
    /// `/x`, empty for `x` (as `deletingLastPathComponent`); trailing slashes are ignored.
    public static func directory(of path: String) -> String {
        let p = trimmingTrailingSlashes(path)
        guard let slash = p.lastIndex(of: "/") else { return "" }
        if slash == p.startIndex { return "/" }
        return trimmingTrailingSlashes(String(p[..<slash]))
    }

    /// The last component: `x.pcap` for `/var/lib/tunnelvision/x.pcap`, `/` for `/` (as
    /// `lastPathComponent`); trailing slashes are ignored.
    public static func lastComponent(of path: String) -> String {
        let p = trimmingTrailingSlashes(path)
        if p == "/" { return p }
        guard let slash = p.lastIndex(of: "/") else { return p }
        return String(p[p.index(after: slash)...])
    }

    private static func trimmingTrailingSlashes(_ path: String) -> String {
        var p = Substring(path)
        while p.count > 1, p.hasSuffix("/") { p = p.dropLast() }
        return String(p)
    }
}
