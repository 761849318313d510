import Core
import Runtime

/// Why a ring file could not be created or attached. Each case names the file and says what to do.
public enum RingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No ring file at `path` (the daemon is not running, or writes its ring elsewhere).
    case notFound(path: String)
    /// The file is shorter than its header or than its header's geometry says.
    case truncated(path: String, size: Int, expected: Int)
    /// The first four bytes are not `TVR1`.
    case badMagic(path: String, found: UInt32)
    /// The layout version is not one this build reads.
    case unsupportedVersion(path: String, found: UInt32, supported: UInt32)
    /// Header size, slot size or slot count are inconsistent or out of range.
    case badGeometry(path: String, reason: String)
    /// Another consumer already holds the ring (one watcher per ring).
    case busy(path: String)
    /// A system call failed (the error names the call and the file).
    case system(SystemError)

    public var description: String {
        switch self {
        case .notFound(let path):
            return "live ring \(path) does not exist: is tunneld running with this config?"
        case .truncated(let path, let size, let expected):
            return "live ring \(path) is truncated: \(size) bytes, its header needs \(expected); restart tunneld to recreate it"
        case .badMagic(let path, let found):
            return "\(path) is not a live ring: magic 0x\(String(found, radix: 16)) instead of \"TVR1\"; check the path"
        case .unsupportedVersion(let path, let found, let supported):
            return "live ring \(path) has layout version \(found), this build reads version \(supported); use matching tunneld and tunnelctl builds"
        case .badGeometry(let path, let reason):
            return "live ring \(path) has an invalid geometry: \(reason); restart tunneld to recreate it"
        case .busy(let path):
            return "live ring \(path) is already being watched by another process; stop it first"
        case .system(let e):
            return "live ring: \(e)"
        }
    }
}
