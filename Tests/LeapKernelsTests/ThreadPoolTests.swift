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
