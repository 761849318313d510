import Glibc

/// `strerror(3)` text for an errno value, e.g. `File exists` — the one place errno becomes words
/// (``SystemError`` and every domain error that wraps one print it).
public func errnoText(_ code: Int32) -> String {
    guard let p = strerror(code) else { return "errno \(code)" }
    return String(cString: p)
}
