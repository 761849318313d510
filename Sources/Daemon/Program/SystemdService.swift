import Core
import Engine
import Runtime
import Synchronization
import SystemIO

/// tunneld under systemd (`Type=notify`, etc/tunneld.service): `READY=1` once the interface,
/// routes and sockets are up; `STATUS=` with the peers connected; `WATCHDOG=1` while every
/// data-path thread's heartbeat advances (so a wedged data path is restarted after `WatchdogSec=`);
/// `RELOADING=1` … `READY=1` around a reload; `STOPPING=1` at shutdown. Without `NOTIFY_SOCKET`
/// nothing is sent and no thread runs.
final class SystemdService: Sendable {
    let notifier: SystemdNotifier?
    let log: Logger
    let engine: GatewayEngine
    let status: @Sendable () -> String
    private let stop = StopSignal()
    private let thread = Mutex<WorkerThread?>(nil)
    /// The watchdog period (µs) systemd expects, nil without one.
    let watchdogUsec: UInt64?

    init(engine: GatewayEngine, log: Logger, environment: [String: String], status: @escaping @Sendable () -> String) {
        self.engine = engine
        self.log = log
        self.status = status
        var notifier: SystemdNotifier?
        do {
            notifier = try SystemdNotifier(environment: environment)
        } catch {
            log.error("systemd: \(error); not notifying systemd (readiness, watchdog)")
        }
        self.notifier = notifier
        watchdogUsec = notifier == nil ? nil : SystemdNotifier.watchdogMicroseconds(environment: environment)
    }

    /// Everything is up: `READY=1` with the first `STATUS=`, then the watchdog/status thread.
    func ready() {
        guard notifier != nil else { return }
        send(["READY=1", "STATUS=" + status()])
        if let usec = watchdogUsec {
            log.info("systemd: watchdog every \(DurationFormat.format(ms: Int64(usec / 1000))); WATCHDOG=1 only while the data path makes progress")
        }
        // Half the watchdog period (sd_watchdog_enabled(3)), at least 600 ms so every thread
        // (waits of 250 ms) gets a turn between checks; STATUS= every 5 s without a watchdog.
        let periodMs = watchdogUsec.map { max(600, Int($0 / 2000)) } ?? 5_000
        let t = WorkerThread(name: "tv-systemd", stopSignal: stop) { [self] in run(periodMs: periodMs) }
        thread.withLock { $0 = t }
    }

    /// Before a reload.
    func reloading() { send(["RELOADING=1", "MONOTONIC_USEC=\(SystemdNotifier.monotonicMicroseconds())"]) }
    /// After a reload (applied or refused: the daemon runs either way).
    func reloaded() { send(["READY=1", "STATUS=" + status()]) }

    /// Shutting down: `STOPPING=1`, the thread stopped.
    func stopping() {
        send(["STOPPING=1"])
        let t = thread.withLock { t -> WorkerThread? in defer { t = nil }; return t }
        t?.stop()
    }

    private func send(_ assignments: [String]) {
        guard let notifier else { return }
        do { try notifier.send(assignments) } catch { log.warning("systemd: \(error)") }
    }

    private func run(periodMs: Int) {
        var last = engine.heartbeats()
        var lastStatus = ""
        var stalled: [String] = []
        while stop.sleep(milliseconds: periodMs) {
            let now = engine.heartbeats()
            let stuck = zip(GatewayEngine.heartbeatNames, zip(last, now)).filter { $0.1.0 == $0.1.1 }.map(\.0)
            last = now
            if stuck.isEmpty {
                if !stalled.isEmpty { log.notice("systemd: data-path thread(s) \(stalled.joined(separator: ", ")) progress again; WATCHDOG=1 resumed") }
                stalled = []
                if watchdogUsec != nil { send(["WATCHDOG=1"]) }
            } else if stalled != stuck {
                stalled = stuck
                log.error("systemd: data-path thread(s) \(stuck.joined(separator: ", ")) made no progress for \(periodMs) ms; "
                    + "WATCHDOG=1 withheld, so systemd restarts tunneld after WatchdogSec=")
            }
            let text = status()
            if text != lastStatus {
                send(["STATUS=" + text])
                lastStatus = text
            }
        }
    }
}
