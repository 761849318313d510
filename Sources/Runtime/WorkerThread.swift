import Core
import CShims
import Glibc

/// A dedicated, joinable OS thread for one loop — a data-path loop, a store writer, a spooler, a
/// schedule — never a task per item. The one way tunneld starts a thread.
///
/// The thread starts in `init`; `join()` waits for it. `stop()` fires the thread's ``StopSignal``
/// first, for loops that sleep on one; loops that wait on something else (a descriptor, a queue)
/// are woken by their owner, which then calls `join()`.
public final class WorkerThread: @unchecked Sendable {
    // Safe: `handle` is written once by `init` before any other thread can see the object and
    // read only by `join` on the owning thread.
    private var handle = pthread_t()
    private var started = false
    private let stopSignal: StopSignal?

    /// Starts `body` on a new thread named `name` (shown by `top -H`, at most 15 bytes).
    /// `stopSignal` is what ``stop()`` fires before joining.
    public init(name: String, stopSignal: StopSignal? = nil, _ body: @escaping @Sendable () -> Void) {
        self.stopSignal = stopSignal
        let box = Unmanaged.passRetained(ThreadBody(name: name, body: body))
        let rc = pthread_create(&handle, nil, { raw in
            let body = Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue()
            _ = body.name.withCString { tv_thread_set_name($0) }
            body.body()
            return nil
        }, box.toOpaque())
        if rc != 0 {
            box.release()
            fatalError("pthread_create(\(name)) failed: \(errnoText(rc))")
        }
        started = true
    }

    /// Waits for the thread to finish (once; later calls return at once).
    public func join() {
        guard started else { return }
        pthread_join(handle, nil)
        started = false
    }

    /// Fires the thread's ``StopSignal`` (if it has one) and waits for the thread.
    public func stop() {
        stopSignal?.stop()
        join()
    }
}

private final class ThreadBody: @unchecked Sendable {
    // Safe: immutable after init, handed from the creating thread to the new one.
    let name: String
    let body: @Sendable () -> Void
    init(name: String, body: @escaping @Sendable () -> Void) {
        self.name = String(name.utf8.prefix(15))!
        self.body = body
    }
}
