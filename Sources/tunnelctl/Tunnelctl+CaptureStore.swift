import Foundation
import Store

/// The store side of `tunnelctl capture` (kept apart: Store and Capture both define
/// `CaptureDetail` and `CaptureLocation`).
extension Tunnelctl {
    /// A flow row's key and first capture location, in plain values.
    struct StoredFlow {
        var proto: UInt8
        var src: StoreAddress
        var srcPort: UInt16
        var dst: StoreAddress
        var dstPort: UInt16
        var capture: (file: Int64, offset: Int64)?
        var lastSeenMs: Int64
        var closed: Bool
    }

    /// Writes capture on/off and detail into the settings row; returns the new (enabled, detail).
    static func storeCaptureSettings(storePath: String, enabled: Bool, detail: String?) throws -> (Bool, String) {
        let store: Store
        do {
            store = try Store(path: storePath)
        } catch {
            throw CLIError.failure("cannot open the store \(storePath): \(error)")
        }
        var settings = (try? store.settings().settings) ?? Settings.factory
        settings.capture.enabled = enabled
        if let detail {
            guard let d = CaptureDetail(rawValue: detail) else {
                throw CLIError.usage("--detail must be metadata or full, not '\(detail)'")
            }
            settings.capture.detail = d
        }
        try store.putSettings(settings, at: Int64(Date().timeIntervalSince1970 * 1000))
        return (settings.capture.enabled, settings.capture.detail.rawValue)
    }

    /// The flow row `id`, nil when the store or the row does not exist.
    static func storedFlow(storePath: String, id: Int64) -> StoredFlow? {
        guard FileManager.default.fileExists(atPath: storePath),
              let store = try? Store(path: storePath, mode: .readOnly),
              let f = try? store.flow(id: id) else { return nil }
        return StoredFlow(
            proto: f.proto, src: f.src, srcPort: f.srcPort, dst: f.dst, dstPort: f.dstPort,
            capture: f.capture.map { ($0.fileSequence, $0.offset) }, lastSeenMs: f.lastSeen, closed: f.closedAt != nil)
    }
}
