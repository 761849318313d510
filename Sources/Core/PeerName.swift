#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The name a peer gets when nothing names it: `peer-` and the first characters of its public key
/// in base64, `/` written `_` and `+` written `-` (so the name is a valid peer name, a file name and a shell word).
/// The one owner of that rule: the config parser (a `[Peer]` without `Name` or a name comment) and
/// the peer registry (a peer added over the UAPI) both call it.
public enum PeerName {
    /// `peer-` + the first `length` characters (8 unless a longer one is needed to be unique) of
    /// `keyBase64` with `/` as `_` and `+` as `-` (a `+` is not a peer-name character).
    public static func fromKey(_ keyBase64: String, length: Int = 8) -> String {
        "peer-" + String(keyBase64.replacingAll("/", with: "_").replacingAll("+", with: "-").prefix(length))
    }
}
