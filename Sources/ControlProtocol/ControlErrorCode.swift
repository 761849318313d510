import Core
/// Why the daemon refused or failed a request. A string on the wire; codes this build does not
/// know decode as themselves (it is an open set).
public struct ControlErrorCode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The wire string.
    public var rawValue: String
    /// A code from its wire string.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The request `type` is not one this daemon knows (it may be older than the client).
    public static let unknownRequest = ControlErrorCode(rawValue: "unknownRequest")
    /// The envelope `version` is newer than this daemon speaks.
    public static let unsupportedVersion = ControlErrorCode(rawValue: "unsupportedVersion")
    /// The request was not valid JSON or lacked a field.
    public static let malformedRequest = ControlErrorCode(rawValue: "malformedRequest")
    /// The request exceeded the size limit (`ControlWire.maxRequestBytes`).
    public static let requestTooLarge = ControlErrorCode(rawValue: "requestTooLarge")
    /// The caller's uid is not allowed (see `ControlServer`).
    public static let permissionDenied = ControlErrorCode(rawValue: "permissionDenied")
    /// The named object (a peer) does not exist.
    public static let notFound = ControlErrorCode(rawValue: "notFound")
    /// The config file has errors (`reload`): the message lists them as `file:line: Key: …`, one a
    /// line, and nothing changed.
    public static let invalidConfig = ControlErrorCode(rawValue: "invalidConfig")
    /// The daemon failed to carry out a valid request.
    public static let failed = ControlErrorCode(rawValue: "failed")

    /// The wire string.
    public var description: String { rawValue }
}
