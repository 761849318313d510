#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// wg-quick's four hooks (wg-quick(8)): `PreUp` before the interface exists, `PostUp` once it is
/// up and configured, `PreDown` before it is taken down, `PostDown` after it is gone. tunneld runs
/// each line through `/bin/sh -c` with `%i` replaced by the interface name, in file order; a
/// failing `PreUp` or `PostUp` line stops the start, like wg-quick's `set -e`.
public enum InterfaceHook: String, CaseIterable, Sendable {
    case preUp = "PreUp"
    case postUp = "PostUp"
    case preDown = "PreDown"
    case postDown = "PostDown"

    /// Whether a failing line aborts (the start); the `Down` hooks only log a failure.
    public var isFatal: Bool { self == .preUp || self == .postUp }
}

extension InterfaceConfig {
    /// The lines of `hook` as written (`%i` not replaced).
    public func lines(of hook: InterfaceHook) -> [String] {
        switch hook {
        case .preUp: return preUp
        case .postUp: return postUp
        case .preDown: return preDown
        case .postDown: return postDown
        }
    }

    /// The commands `hook` runs: its lines with every `%i` replaced by `interface`, as wg-quick's
    /// `${cmd//%i/$INTERFACE}` does.
    public func commands(of hook: InterfaceHook, interface: String) -> [String] {
        lines(of: hook).map { $0.replacingAll("%i", with: interface) }
    }
}
