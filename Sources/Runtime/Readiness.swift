import Core
import Glibc

/// `poll(2)` on a few descriptors plus a shutdown notifier, without allocating.
public enum Readiness {
    /// Waits until one of `descriptors` is readable (or hung up / in error, which a read then
    /// reports), `shutdown` is signalled, or `timeoutMilliseconds` pass (-1 = forever).
    /// One or two descriptors (nil = none). A signalled `shutdown` wins over readable data.
    public static func wait(
        _ descriptors: (Int32, Int32?), _ shutdown: EventNotifier, timeoutMilliseconds: Int32
    ) throws(SystemError) -> WaitResult {
        let events = Int16(POLLIN)
        var fds = (
            pollfd(fd: shutdown.descriptor, events: events, revents: 0),
            pollfd(fd: descriptors.0, events: events, revents: 0),
            pollfd(fd: descriptors.1 ?? -1, events: events, revents: 0)
        )
        let n = try withUnsafeMutableBytes(of: &fds) { (raw) throws(SystemError) -> Int32 in
            let p = raw.baseAddress!.assumingMemoryBound(to: pollfd.self)
            return try Sys.call("poll") { poll(p, 3, timeoutMilliseconds) }
        }
        if n == 0 { return .timedOut }
        if fds.0.revents != 0 { return .closed }
        return .readable
    }
}
