// Thread pool: every task runs exactly once, for 1...N threads and many back-to-back runs.
import Glibc
import LeapKernels
import Testing

final class Counter: @unchecked Sendable {
    var counts: [Int32]
    init(_ n: Int) { counts = [Int32](repeating: 0, count: n) }
}

@Test(arguments: [1, 2, 3, 4, 8])
func everyTaskRunsExactlyOnce(_ threads: Int) throws {
    let pool = try ThreadPool(threads: threads)
    #expect(pool.threadCount == threads)
    for tasks in [1, 2, 3, 7, 64, 1000] {
        for _ in 0..<20 {
            let c = Counter(tasks)
            var seenThreads = Set<Int>()
            var lock = pthread_mutex_t()
            pthread_mutex_init(&lock, nil)
            c.counts.withUnsafeMutableBufferPointer { counts in
                pool.run(tasks: tasks) { t, thread in
                    counts[t] += 1 // distinct t per call: no two threads write the same slot
                    pthread_mutex_lock(&lock)
                    seenThreads.insert(thread)
                    pthread_mutex_unlock(&lock)
                }
            }
            #expect(c.counts.allSatisfy { $0 == 1 }, "threads=\(threads) tasks=\(tasks)")
            #expect(seenThreads.allSatisfy { $0 >= 0 && $0 < threads })
        }
    }
}

@Test func parallelForCoversTheRangeWithAlignedChunks() throws {
    let pool = try ThreadPool(threads: 3)
    for count in [1, 15, 16, 17, 100, 576, 49152] {
        let c = Counter(count)
        var starts = [Int](repeating: -1, count: 1000)
        var lock = pthread_mutex_t()
        pthread_mutex_init(&lock, nil)
        var nChunks = 0
        c.counts.withUnsafeMutableBufferPointer { counts in
            pool.parallelFor(count, align: 16) { range in
                for i in range { counts[i] += 1 }
                pthread_mutex_lock(&lock)
                if nChunks < starts.count { starts[nChunks] = range.lowerBound }
                nChunks += 1
                pthread_mutex_unlock(&lock)
            }
        }
        #expect(c.counts.allSatisfy { $0 == 1 }, "count=\(count)")
        #expect(starts.prefix(min(nChunks, starts.count)).allSatisfy { $0 % 16 == 0 })
    }
}

@Test func defaultThreadCountIsPhysicalCores() throws {
    let pool = try ThreadPool()
    #expect(pool.threadCount == ThreadPool.physicalCores)
    #expect(ThreadPool.physicalCores >= 1)
}

@Test func nestedRunExecutesInlineAndCompletes() throws {
    let pool = try ThreadPool(threads: 2)
    let c = Counter(8 * 5)
    c.counts.withUnsafeMutableBufferPointer { counts in
        pool.run(tasks: 8) { outer, _ in
            // a run from inside a task must not disturb the outer run
            pool.run(tasks: 5) { inner, thread in
                counts[outer * 5 + inner] += 1
                #expect(thread == 0)
            }
        }
    }
    #expect(c.counts.allSatisfy { $0 == 1 })
}

/// Back-to-back runs whose task counts go up and down: a worker arriving late from a smaller run must never
/// claim a task of it against the next, larger run (that phantom task ran the new job with an index past
/// its end and left the caller waiting forever). The loop runs on its own thread under a watchdog, so a
/// hang fails the test instead of blocking the suite.
@Test func varyingRunsNeverRunPhantomTasksOrHang() throws {
    final class Shared: @unchecked Sendable {
        let pool: ThreadPool
        var outOfRange = 0, wrongCount = 0
        var finished = false  // read by the watchdog under `lock`
        var lock = pthread_mutex_t()
        init(_ pool: ThreadPool) { self.pool = pool; pthread_mutex_init(&lock, nil) }
    }
    let shared = Shared(try ThreadPool(threads: 2))
    var thread = pthread_t()
    let started = pthread_create(&thread, nil, { arg in
        guard let arg else { return nil }
        let s = Unmanaged<Shared>.fromOpaque(arg).takeRetainedValue()
        let counts = UnsafeMutablePointer<Int32>.allocate(capacity: 16)
        defer { counts.deallocate() }
        for r in 0..<200_000 {
            let tasks = 1 + (r * 7919) % 8  // 1...8, shuffled
            counts.initialize(repeating: 0, count: 16)
            let work = (r % 13) * 50  // uneven task lengths make workers arrive late
            s.pool.run(tasks: tasks) { t, _ in
                for i in 0..<work { counts[8 + t % 8] &+= Int32(truncatingIfNeeded: i) }  // real work
                if t < 0 || t >= tasks { s.outOfRange += 1 } else { counts[t] += 1 }
            }
            if (0..<tasks).contains(where: { counts[$0] != 1 }) { s.wrongCount += 1 }
        }
        pthread_mutex_lock(&s.lock)
        s.finished = true
        pthread_mutex_unlock(&s.lock)
        return nil
    }, Unmanaged.passRetained(shared).toOpaque())
    try #require(started == 0)
    var done = false
    for _ in 0..<1200 where !done {  // up to 120 s; the loop takes ~1 s
        usleep(100_000)
        pthread_mutex_lock(&shared.lock)
        done = shared.finished
        pthread_mutex_unlock(&shared.lock)
    }
    #expect(done, "the thread pool hung: a run never completed")
    if done { pthread_join(thread, nil) } else { pthread_detach(thread) }
    #expect(shared.outOfRange == 0, "tasks ran with an index past their run's task count")
    #expect(shared.wrongCount == 0, "a run did not execute each of its tasks exactly once")
}

/// Idle workers sleep: after a burst of runs and the short spin that follows it (200 µs), the workers use
/// no CPU while nothing runs. 0.5 s idle may cost a few wake-ups of bookkeeping, far below 10 ms; a worker
/// still spinning would use the whole 0.5 s.
@Test func idleWorkersUseNoCPU() throws {
    let pool = try ThreadPool(threads: 3)
    for _ in 0..<200 { pool.run(tasks: 12) { _, _ in } }
    usleep(50_000)  // past the spin
    let before = pool.workerCPUSeconds
    usleep(500_000)
    let used = pool.workerCPUSeconds - before
    #expect(used < 0.01, "idle workers used \(used) s of CPU in 0.5 s")
    pool.run(tasks: 12) { _, _ in }  // and they still wake up for work
}

/// The process pool is one per thread count, and the lease lets one holder in at a time, in arrival order.
@Test func sharedPoolsAndTheirLease() throws {
    let a = try ThreadPool.shared(threads: 3), b = try ThreadPool.shared(threads: 3)
    #expect(a === b)
    #expect(try ThreadPool.shared(threads: 2) !== a)
    final class State: @unchecked Sendable {
        var inside = 0, maxInside = 0, entries = 0
        let pool: ThreadPool
        init(_ p: ThreadPool) { pool = p }
    }
    let state = State(a)
    var threads: [pthread_t] = []
    for _ in 0..<4 {
        var t = pthread_t()
        pthread_create(&t, nil, { arg in
            guard let arg else { return nil }
            let s = Unmanaged<State>.fromOpaque(arg).takeRetainedValue()
            for _ in 0..<50 {
                s.pool.exclusive {
                    s.inside += 1
                    s.maxInside = max(s.maxInside, s.inside)
                    s.entries += 1
                    s.pool.run(tasks: 8) { _, _ in }
                    s.inside -= 1
                }
            }
            return nil
        }, Unmanaged.passRetained(state).toOpaque())
        threads.append(t)
    }
    for t in threads { pthread_join(t, nil) }
    #expect(state.maxInside == 1)
    #expect(state.entries == 200)
}
