// One worker thread that runs queued jobs in order (the prompt cache's disk writes, kept off the token
// loop). `waitUntilIdle` blocks until every job queued before it has run; deinit runs what is queued, then
// ends the thread.
import Glibc
import LeapCore

final class BackgroundWriter: @unchecked Sendable {
    private let queue = JobQueue()
    private var thread: pthread_t?
    private let startLock = Lock()

    deinit {
        queue.stop()
        if let t = thread { pthread_join(t, nil) }
    }

    /// Queues `job`; the worker starts on first use. When no thread can be started the job runs now.
    func enqueue(_ job: @escaping () -> Void) {
        let started = startLock.withLock { () -> Bool in
            if thread != nil { return true }
            var t = pthread_t()
            let q = Unmanaged.passRetained(queue).toOpaque()
            guard pthread_create(&t, nil, { arg in
                guard let arg else { return nil }
                let queue = Unmanaged<JobQueue>.fromOpaque(arg).takeRetainedValue()
                queue.work()
                return nil
            }, q) == 0 else {
                Unmanaged<JobQueue>.fromOpaque(q).release()
                return false
            }
            thread = t
            return true
        }
        if started { queue.push(job) } else { job() }
    }

    func waitUntilIdle() { queue.waitUntilIdle() }
}

/// The jobs and the worker's loop (shared by the writer and its thread).
private final class JobQueue: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let changed = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var jobs: [() -> Void] = []
    private var running = false
    private var stopping = false

    init() {
        mutex.initialize(to: pthread_mutex_t())
        changed.initialize(to: pthread_cond_t())
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(changed, nil)
    }

    deinit {
        pthread_cond_destroy(changed)
        pthread_mutex_destroy(mutex)
        changed.deallocate()
        mutex.deallocate()
    }

    func push(_ job: @escaping () -> Void) {
        pthread_mutex_lock(mutex)
        jobs.append(job)
        pthread_cond_broadcast(changed)
        pthread_mutex_unlock(mutex)
    }

    func stop() {
        pthread_mutex_lock(mutex)
        stopping = true
        pthread_cond_broadcast(changed)
        pthread_mutex_unlock(mutex)
    }

    func waitUntilIdle() {
        pthread_mutex_lock(mutex)
        while !jobs.isEmpty || running { pthread_cond_wait(changed, mutex) }
        pthread_mutex_unlock(mutex)
    }

    func work() {
        pthread_mutex_lock(mutex)
        while true {
            while jobs.isEmpty && !stopping { pthread_cond_wait(changed, mutex) }
            if jobs.isEmpty { break }
            let job = jobs.removeFirst()
            running = true
            pthread_mutex_unlock(mutex)
            job()
            pthread_mutex_lock(mutex)
            running = false
            pthread_cond_broadcast(changed)
        }
        pthread_mutex_unlock(mutex)
    }
}
