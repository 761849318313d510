import Core
/// Every error found in one config file (parsing goes on after the first, like a compiler, so an
/// operator fixes them all in one pass). Thrown by `TunnelConfig.parse` and `TunnelConfig.load`.
public struct ConfigErrors: Error, Sendable, CustomStringConvertible {
    /// The errors in file order; never empty.
    public var errors: [ConfigError]

    /// A list of errors (must not be empty).
    public init(_ errors: [ConfigError]) {
        self.errors = errors
    }

    /// One error per line.
    public var description: String { errors.map(\.description).joined(separator: "\n") }
}
