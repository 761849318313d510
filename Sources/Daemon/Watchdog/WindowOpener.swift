import Runtime

/// The watchdog's shared-store window opens, run one after another on their own thread
/// (`tv-window-open`) so the handshake thread never waits on a database. The thread runs while
/// there is work and ends when the queue is empty; the next submission starts another.
final class WindowOpener: @unchecked Sendable {
    // Safe: `queue`, `running` and `thread` are read and written only with `lock` held.
    private let lock = ConditionLock()
    private var queue: [@Sendable () -> Void] = []
    private var running = false
    private var thread: WorkerThread?

    /// Runs `job` on the opener thread, after the ones submitted before it.
    func submit(_ job: @escaping @Sendable () -> Void) {
        lock.withLock {
            queue.append(job)
            guard !running else { return }
            running = true
            let finished = thread  // the previous run's thread: done, or returning now
            thread = WorkerThread(name: "tv-window-open") { [self] in
                finished?.join()
                drain()
            }
        }
    }

    private func drain() {
        while true {
            let job: (@Sendable () -> Void)? = lock.withLock {
                if queue.isEmpty {
                    running = false
                    lock.broadcast()
                    return nil
                }
                return queue.removeFirst()
            }
            guard let job else { return }
            job()
        }
    }

    /// Waits until every submitted job has run.
    func wait() {
        let last: WorkerThread? = lock.withLock {
            while running { lock.wait() }
            defer { thread = nil }
            return thread
        }
        last?.join()
    }
}
