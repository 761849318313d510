import Glibc
import Synchronization

/// A mutex with one condition variable whose timed waits run on `CLOCK_MONOTONIC` (so a wall-clock
/// step neither cuts a wait short nor stretches it). The one in-process "sleep until something
/// changed" primitive: worker queues (`StoreWriter`, `CaptureSpooler`, `DaemonMarkers`), schedules
/// (`PruneSchedule`) and ``StopSignal`` wait on it.
///
/// Usage: take the lock, wait in a loop on your predicate, change state and `broadcast()` under it.
/// There is a single condition variable, so when different waiters wait for different things use
/// `broadcast()` (each re-checks its own predicate); `signal()` is for locks with one kind of waiter.
///
/// `@unchecked Sendable`: the pthread objects are only used through the pthread calls, which are
/// thread-safe; the pointers are immutable.
public final class ConditionLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        pthread_mutex_init(mutex, nil)
        var attr = pthread_condattr_t()
        pthread_condattr_init(&attr)
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attr)
        pthread_condattr_destroy(&attr)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }

    /// Runs `body` with the lock held.
    @inline(__always)
    public func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Waits for a `signal`/`broadcast` (lock held; it is released while waiting). May return
    /// spuriously: always wait in a loop on the predicate.
    public func wait() { pthread_cond_wait(condition, mutex) }

    /// Like ``wait()`` but gives up at `deadline` (``SystemClock`` monotonic nanoseconds).
    /// Returns false when the deadline passed.
    @discardableResult
    public func wait(untilMonotonic deadline: UInt64) -> Bool {
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        return pthread_cond_timedwait(condition, mutex, &ts) != ETIMEDOUT
    }

    /// Like ``wait()`` but for at most `nanoseconds`. Returns false when the time ran out.
    @discardableResult
    public func wait(timeoutNanoseconds nanoseconds: UInt64) -> Bool {
        wait(untilMonotonic: SystemClock().monotonicNanoseconds() &+ nanoseconds)
    }

    /// Wakes one waiter.
    public func signal() { pthread_cond_signal(condition) }
    /// Wakes every waiter.
    public func broadcast() { pthread_cond_broadcast(condition) }
}

/// A stop request that a worker loop checks and sleeps on, instead of polling a flag between
/// `usleep`s: ``sleep(milliseconds:)`` returns early once ``stop()`` is called.
public final class StopSignal: Sendable {
    private let lock = ConditionLock()
    private let stopped = Atomic<Bool>(false)

    public init() {}

    /// Whether ``stop()`` was called.
    public var isStopped: Bool { stopped.load(ordering: .acquiring) }

    /// Sets the flag and wakes every sleeper. Idempotent.
    public func stop() {
        lock.withLock {
            stopped.store(true, ordering: .releasing)
            lock.broadcast()
        }
    }

    /// Sleeps `milliseconds` (monotonic) or until ``stop()``; returns false when stopped.
    @discardableResult
    public func sleep(milliseconds: Int) -> Bool {
        let deadline = SystemClock().monotonicNanoseconds() &+ UInt64(max(0, milliseconds)) &* 1_000_000
        return lock.withLock {
            while !stopped.load(ordering: .acquiring) && lock.wait(untilMonotonic: deadline) {}
            return !stopped.load(ordering: .acquiring)
        }
    }
}
