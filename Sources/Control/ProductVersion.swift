import Core
/// The TunnelVision release both binaries report: `tunnelctl --version` prints it today;
/// `tunneld` (Gateway's `Tunneld.version`, which carries the same string) can use it too, since
/// Gateway and tunnelctl both depend on this module.
public enum ProductVersion {
    public static let current = "0.1.0"
}
