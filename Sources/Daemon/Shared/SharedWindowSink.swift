import Core
import Engine

/// The watchdog's sink with a shared store: every record goes on to `inner`; each
/// window write also goes to the `SharedSync`, which pushes moves and reconciles windows the
/// watchdog opened without the shared store's answer.
public final class SharedWindowSink: WatchdogSink {
    let inner: any WatchdogSink
    let sync: SharedSync

    /// `inner`'s records, window writes also to `sync`.
    public init(_ inner: any WatchdogSink, sync: SharedSync) {
        self.inner = inner
        self.sync = sync
    }

    public func record(_ record: WatchdogRecord) {
        if case let .windowPut(peer, w, used, _) = record { sync.localWindow(peer: peer, dates: w, used: used, at: sync.now()) }
        inner.record(record)
    }

    public func record(_ record: WatchdogRecord, tier: PeerTier) {
        if case let .windowPut(peer, w, used, _) = record { sync.localWindow(peer: peer, dates: w, used: used, at: sync.now()) }
        inner.record(record, tier: tier)
    }
}
