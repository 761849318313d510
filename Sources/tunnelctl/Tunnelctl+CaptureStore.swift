import Config
import Core
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Store

/// The store side of `tunnelctl capture` (kept apart: Store and Capture both define
/// `CaptureDetail` and `CaptureLocation`).
extension Tunnelctl {
    /// A flow row's key and first capture location, in plain values.
    struct StoredFlow {
        var proto: UInt8
        var src: IPAddress
        var srcPort: UInt16
        var dst: IPAddress
        var dstPort: UInt16
        var capture: (file: Int64, offset: Int64)?
        var lastSeenMs: Int64
        var closed: Bool
    }

    /// Writes capture on/off and detail into the settings row; returns the new (enabled, detail).
    static func storeCaptureSettings(_ config: TunnelConfig, enabled: Bool, detail: String?) throws -> (Bool, String) {
        let store = try CLIStore.write(config)
        var settings = (try? store.settings().settings) ?? Settings.factory
        settings.capture.enabled = enabled
        // The option check has taken only metadata or full (`OptionKind.choice`).
        if let detail, let d = CaptureDetail(rawValue: detail) { settings.capture.detail = d }
        try CLIStore.call { try store.putSettings(settings, at: Int64(Date().timeIntervalSince1970 * 1000)) }
        return (settings.capture.enabled, settings.capture.detail.rawValue)
    }

    /// The flow row `id`, nil when the store or the row does not exist. A store that cannot be
    /// read (permission denied, damaged, …) is an error, not "no such flow".
    static func storedFlow(storePath: String, id: Int64) throws -> StoredFlow? {
        guard let store = try CLIStore.read(path: storePath) else { return nil }
        guard let f = try CLIStore.call({ try store.flow(id: id) }) else { return nil }
        return StoredFlow(
            proto: f.proto, src: f.src, srcPort: f.srcPort, dst: f.dst, dstPort: f.dstPort,
            capture: f.capture.map { (Int64($0.fileSequence), Int64(truncatingIfNeeded: $0.offset)) }, lastSeenMs: f.lastSeen, closed: f.closedAt != nil)
    }
}
