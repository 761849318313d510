/// The TunnelVision release both binaries report (`tunnelctl --version`, its man page,
/// `tunneld --version` and the control socket's status reply): one string, one owner.
public enum ProductVersion {
    /// The release, `MAJOR.MINOR.PATCH`.
    public static let current = "0.1.0"
}
