import Core
import CShims
import Glibc

/// A dedicated, joinable OS thread for one data-path loop (not a task per packet).
final class GatewayThread: @unchecked Sendable {
    // Safe: `handle` is written once by `start` before any other thread can see the object and
    // read only by `join` on the owning thread.
    private var handle = pthread_t()
    private var started = false

    /// Starts `body` on a new thread named `name` (shown by `top -H`, at most 15 bytes).
    init(name: String, _ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(ThreadBody(name: name, body: body))
        let rc = pthread_create(&handle, nil, { raw in
            let body = Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue()
            _ = body.name.withCString { tv_thread_set_name($0) }
            body.body()
            return nil
        }, box.toOpaque())
        if rc != 0 {
            box.release()
            fatalError("pthread_create(\(name)) failed: \(String(cString: strerror(rc)))")
        }
        started = true
    }

    /// Waits for the thread to finish.
    func join() {
        guard started else { return }
        pthread_join(handle, nil)
        started = false
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
