import Core
/// How the parser reads the file of a `host @PATH` list: the file system for `tunneld` and
/// `tunnelctl`, anything for tests. The one other I/O of the module besides
/// `PolicySource.loadDirectory`.
public struct HostListReader: Sendable {
    /// The bytes of the file at a path, or a one-line reason it cannot be read.
    public var read: @Sendable (String) -> Result<[UInt8], PolicyLoadError>

    /// A reader calling `read` for each list path.
    public init(read: @escaping @Sendable (String) -> Result<[UInt8], PolicyLoadError>) { self.read = read }

    /// Reads lists from the file system.
    public static let files = HostListReader { path in
        PolicySource.readFile(path).mapError { e in PolicyLoadError(message: PolicySource.errnoSentence(e.code)) }
    }

    /// Reads nothing: every list is an error (for parsing text that must not touch files).
    public static let none = HostListReader { _ in .failure(PolicyLoadError(message: "host lists are not read here")) }
}
