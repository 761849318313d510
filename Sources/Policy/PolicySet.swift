import Core
/// The parsed contents of a policy directory: rules in evaluation order (files in byte order of
/// their names, lines top to bottom), the defaults, and everything worth telling the operator.
public struct PolicySet: Sendable {
    /// Rules in evaluation order; the first that matches decides.
    public var rules: PolicyRules
    /// The outbound default (`default allow|block|reject` or `default out …`).
    public var defaultOut: PolicyDefault
    /// The inbound default (`default in …`).
    public var defaultIn: PolicyDefault
    /// Errors and warnings in the order found.
    public var diagnostics: [PolicyDiagnostic]
    /// The file names read, in evaluation order.
    public var files: [String]
    /// What `gateway` in the rules stands for, once bound (`bindingGateway`); nil while unbound
    /// (then `from|to gateway` matches no address).
    public var gateway: [IPAddress]? = nil

    /// True when any diagnostic is an error (such a set must not be loaded).
    public var hasErrors: Bool { diagnostics.contains { $0.severity == .error } }
    /// Only the errors.
    public var errors: [PolicyDiagnostic] { diagnostics.filter { $0.severity == .error } }
    /// Only the warnings.
    public var warnings: [PolicyDiagnostic] { diagnostics.filter { $0.severity == .warning } }

    /// The default for flows of `direction`.
    public func defaultRule(for direction: Direction) -> PolicyDefault {
        direction == .out ? defaultOut : defaultIn
    }

    /// The documented built-in defaults when the files name none: outbound flows are allowed,
    /// inbound flows (started towards a peer) are blocked.
    public static let builtInDefaultOut = Verdict.allow
    /// See `builtInDefaultOut`.
    public static let builtInDefaultIn = Verdict.block
}

/// A `default` line, or the built-in default when no line gave one.
public struct PolicyDefault: Sendable, Hashable {
    public var action: Verdict
    public var direction: Direction
    /// Where it was written; nil for the built-in default.
    public var location: SourceLocation?
    /// The line as written, or a description of the built-in default.
    public var text: String
}

extension PolicySet {
    /// Above this many rules `policy check` does not look for rules shadowed by earlier ones
    /// (the check is quadratic; it is advice, not safety).
    public static var shadowCheckLimit: Int { PolicyAnalysis.shadowCheckLimit }
}
