import Glibc
import Synchronization

/// A pthread mutex. `withLock` never calls out to user code while held (callers copy state out first).
package final class Lock: @unchecked Sendable {
    // Heap storage: `&storedProperty` is an inout access that Swift may give a temporary address (and
    // that sanitizers see as a write); a mutex needs one fixed address shared by every thread.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    package init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    package func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// A lock-free flag readable and settable from any thread.
package final class AtomicFlag: Sendable {
    private let value = Atomic<Bool>(false)

    package init() {}
    package var isSet: Bool { value.load(ordering: .acquiring) }
    package func set() { value.store(true, ordering: .releasing) }
    package func clear() { value.store(false, ordering: .releasing) }
    /// Sets the flag; returns false if it was already set.
    package func testAndSet() -> Bool {
        value.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }
}

/// Monotonic seconds.
package func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}
