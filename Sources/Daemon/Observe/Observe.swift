// The daemon's live-ring and capture set-up (called from Tunneld.run in one block).
import Engine
import Core
import Capture
import Config
import ControlProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import LiveFeed
import Runtime
import Store

/// The live ring, the capture writer and the settings poller of a running daemon.
public struct Observe: Sendable {
    /// The observer attached to the engine.
    public let observer: PacketObserver
    /// The settings poller (nil when the capture directory is unusable).
    public let poller: CaptureSettingsPoller?

    /// Ring slots: 65,536 × 128 B = 8 MiB, about 60 ms of a 1 Mpps data path.
    public static let ringSlots = 65_536
    /// Environment override of the capture file size limit (bytes), for tests.
    public static let fileBytesVariable = "TUNNELD_CAPTURE_FILE_BYTES"

    /// Creates `RuntimeDirectory/live.ring` and the capture writer in `StateDirectory/capture`,
    /// applies the stored capture settings, names the peers, attaches the observer to `engine`
    /// (before it starts) and starts the settings poller. Failures are logged, never fatal: the
    /// gateway runs without a live feed or capture rather than not at all.
    public static func start(config: TunnelConfig, engine: GatewayEngine, log: Logger) -> Observe {
        let iface = config.interface
        var ring: RingProducer? = nil
        do {
            ring = try RingProducer(directory: iface.runtimeDirectory, slotCount: ringSlots)
        } catch {
            log.error("live ring: \(error); tunnelctl watch will not work")
        }
        let storePath = iface.storePath
        var settings = Settings.factory
        if let store = try? StateStore(path: storePath, mode: .readOnly, busyTimeoutMs: 1000),
           let decoded = try? store.settings() {
            settings = decoded.settings
        }
        let detail: CaptureDetail = settings.capture.detail == .full ? .full : .metadata
        let fileBytes = ProcessInfo.processInfo.environment[fileBytesVariable].flatMap(Int.init) ?? 64 << 20
        var capture: CaptureSpooler? = nil
        let directory = iface.stateDirectory + "/capture"
        do {
            capture = try CaptureSpooler(directory: directory, detail: detail, maxFileBytes: max(4096, fileBytes),
                                        enabled: settings.capture.enabled)
        } catch {
            log.error("capture directory \(directory): \(error); capture is unavailable")
        }
        if settings.capture.enabled { log.info("capture: on, detail \(detail.rawValue), files in \(directory)") }
        let observer = PacketObserver(ring: ring, capture: capture, flowCapacity: engine.options.flowCapacity,
                                      peers: engine.registry, clock: engine.clock)
        engine.observer = observer
        let poller = capture.map { _ in CaptureSettingsPoller(storePath: storePath, observer: observer, log: log) }
        return Observe(observer: observer, poller: poller)
    }

    /// The control request `capture` (`tunnelctl capture on|off`, sent after it wrote the
    /// settings row): applies the settings now and answers once the data path runs with them.
    public func capture(enabled: Bool, detail: String, timeoutMilliseconds: Int = 1000) -> ControlResponse {
        guard let poller, let capture = observer.capture else {
            return .failure(.failed, "capture is unavailable: the capture directory could not be used (see the daemon's log)")
        }
        let d: CaptureDetail
        switch detail {
        case "full": d = .full
        case "metadata": d = .metadata
        default: return .failure(.malformedRequest, "capture detail must be metadata or full, not '\(detail)'")
        }
        guard poller.apply(CaptureSettingsChange(enabled: enabled, detail: d), timeoutMilliseconds: timeoutMilliseconds) else {
            return .failure(.failed, "the data path did not take the capture settings within \(timeoutMilliseconds) ms")
        }
        return .capture(CaptureReply(enabled: enabled, detail: d.rawValue, directory: capture.directory))
    }

    /// Stops the poller and closes the capture and the ring (after the engine stopped).
    public func stop() {
        poller?.stop()
        observer.close()
    }
}
