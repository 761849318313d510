import Core
/// What a wait on a device, bind or watcher returned.
public enum WaitResult: Sendable, Equatable {
    /// Data is (probably) ready: a nonblocking read should now make progress.
    case readable
    /// The timeout passed first.
    case timedOut
    /// The object was closed (its shutdown notifier fired); stop using it.
    case closed
}
