// ThreadPool: persistent worker threads for splitting one kernel call across cores.
import CLeapKernels
import LeapCore

/// A fixed set of worker threads that run the tasks of one call at a time.
///
/// `run` executes `body(task, thread)` for every task in `0..<tasks` on the calling thread plus the
/// `threadCount - 1` workers and returns when all are done. Workers spin a short while after a run (decode issues
/// hundreds of small matmuls per token) and then sleep on a futex. One parallel `run` at a time: a `run`
/// issued while another is in progress (nested in a task, or from another thread) executes its tasks
/// inline on its caller. `scratch` belongs to whoever is currently calling into `Kernels` with this pool.
///
/// Inference contexts share one pool per thread count for the whole process (`shared(threads:)`); each
/// forward pass holds the pool's lease (`exclusive`), handed out first come first served, so that a
/// decode step of one conversation and a prefill chunk of another alternate instead of one of them running
/// its tasks inline, single-threaded.
package final class ThreadPool: @unchecked Sendable {
    package let threadCount: Int
    private let pool: OpaquePointer
    private var scratchBuffer: UnsafeMutableRawPointer?
    private var scratchCapacity = 0
    // The lease: a ticket lock (tickets are served in the order they were drawn).
    private let leaseMonitor = Monitor()
    private var nextTicket = 0
    private var servingTicket = 0

    private static let registryMonitor = Monitor()
    nonisolated(unsafe) private static var registry: [Int: ThreadPool] = [:]

    /// The process-wide pool of `threads` threads (nil = physical cores; clamped to 1...1024), created on
    /// first use and kept for the life of the process. Its workers sleep on a futex while idle.
    package static func shared(threads: Int? = nil) throws -> ThreadPool {
        let n = max(1, min(1024, threads ?? ThreadPool.physicalCores))
        return try registryMonitor.withLock {
            if let p = registry[n] { return p }
            let p = try ThreadPool(threads: n)
            registry[n] = p
            return p
        }
    }

    /// Runs `body` holding the pool's lease: callers of `exclusive` run one at a time, in arrival order.
    /// Not reentrant (a nested `exclusive` on the same pool waits forever).
    package func exclusive<T>(_ body: () throws -> T) rethrows -> T {
        let ticket = leaseMonitor.withLock { () -> Int in
            let t = nextTicket
            nextTicket += 1
            while servingTicket != t { leaseMonitor.wait() }
            return t
        }
        defer {
            leaseMonitor.withLock {
                servingTicket = ticket + 1
                leaseMonitor.broadcast()
            }
        }
        return try body()
    }

    /// Physical cores available to this process (the default thread count).
    package static var physicalCores: Int { Int(lk_physical_cores()) }

    /// - Parameter threads: total threads including the caller; nil = physical cores. Clamped to 1...1024.
    package init(threads: Int? = nil) throws {
        let n = max(1, min(1024, threads ?? ThreadPool.physicalCores))
        guard let p = lk_pool_create(Int32(n)) else {
            throw LeapError(.outOfMemory, "could not create a thread pool of \(n) threads")
        }
        pool = p
        threadCount = Int(lk_pool_threads(p))
    }

    deinit {
        lk_pool_free(pool)
        scratchBuffer?.deallocate()
    }

    /// CPU seconds the worker threads have used so far (the callers' share not included).
    package var workerCPUSeconds: Double { Double(lk_pool_worker_cpu_ns(pool)) * 1e-9 }

    /// Runs `body(task, thread)` for every task in `0..<tasks`; `thread` is in `0..<threadCount`.
    package func run(tasks: Int, _ body: (_ task: Int, _ thread: Int) -> Void) {
        if tasks <= 0 { return }
        if tasks == 1 || threadCount == 1 {
            for t in 0..<tasks { body(t, 0) }
            return
        }
        withoutActuallyEscaping(body) { escapable in
            var closure = escapable
            withUnsafeMutablePointer(to: &closure) { ptr in
                lk_pool_run(
                    pool,
                    { ctx, task, thread in
                        guard let ctx else { return }
                        let f = ctx.assumingMemoryBound(to: ((Int, Int) -> Void).self).pointee
                        f(Int(task), Int(thread))
                    }, UnsafeMutableRawPointer(ptr), Int32(clamping: tasks))
            }
        }
    }

    /// A reusable 64-byte aligned buffer of at least `bytes` bytes (contents undefined; grows, never shrinks).
    package func scratch(bytes: Int) -> UnsafeMutableRawPointer {
        if let b = scratchBuffer, scratchCapacity >= bytes { return b }
        scratchBuffer?.deallocate()
        let cap = max(bytes, 4096)
        let b = UnsafeMutableRawPointer.allocate(byteCount: cap, alignment: 64)
        scratchBuffer = b
        scratchCapacity = cap
        return b
    }

    /// Splits `0..<count` into about `chunksPerThread * threadCount` ranges whose starts are multiples of
    /// `align`, and runs `body(range)` for each on the pool.
    package func parallelFor(_ count: Int, align: Int = 1, chunksPerThread: Int = 4, _ body: (Range<Int>) -> Void) {
        if count <= 0 { return }
        let a = max(1, align)
        let wanted = max(1, threadCount * chunksPerThread)
        var chunk = (count + wanted - 1) / wanted
        chunk = (chunk + a - 1) / a * a
        let tasks = (count + chunk - 1) / chunk
        run(tasks: tasks) { t, _ in
            let lo = t * chunk
            body(lo..<min(count, lo + chunk))
        }
    }
}
