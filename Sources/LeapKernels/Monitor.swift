// Monitor: a pthread mutex with one condition variable, for the few places that wait for each other
// (the pool lease, the decode batcher).
import Glibc

/// A mutex and a condition variable. `wait` must be called with the lock held (inside `withLock`).
package final class Monitor: @unchecked Sendable {
    // Heap storage: a mutex needs one fixed address shared by every thread.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let cond: UnsafeMutablePointer<pthread_cond_t>

    package init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        cond = .allocate(capacity: 1)
        cond.initialize(to: pthread_cond_t())
        var attr = pthread_condattr_t()
        pthread_condattr_init(&attr)
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
        pthread_cond_init(cond, &attr)
        pthread_condattr_destroy(&attr)
    }

    deinit {
        pthread_cond_destroy(cond)
        pthread_mutex_destroy(mutex)
        cond.deallocate()
        mutex.deallocate()
    }

    package func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Releases the lock until `broadcast` (or a spurious wake-up), then holds it again.
    package func wait() { pthread_cond_wait(cond, mutex) }

    /// Like `wait`, returning by monotonic time `deadline` (seconds, `Monitor.now`) at the latest.
    package func wait(until deadline: Double) {
        var ts = timespec()
        let whole = deadline.rounded(.down)
        ts.tv_sec = Int(whole)
        ts.tv_nsec = Int((deadline - whole) * 1e9)
        pthread_cond_timedwait(cond, mutex, &ts)
    }

    package func broadcast() { pthread_cond_broadcast(cond) }

    /// Monotonic seconds (the clock of `wait(until:)`).
    package static var now: Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
    }
}
