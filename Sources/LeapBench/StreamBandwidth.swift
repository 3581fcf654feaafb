// Memory bandwidth probe shared by the benchmarks: a plain streaming read of a buffer far beyond L3.
import CLeapKernels
import LeapKernels

/// GB/s of the fastest of `reps` streaming reads of `bytes` (split evenly over `threads` threads of a pool),
/// timed with `clock`; nil when the buffer or the pool cannot be had.
func streamReadBandwidth(bytes: Int, threads: Int, reps: Int = 5, clock: () -> Double) -> Double? {
    let count = bytes / 4
    guard threads > 0, count >= threads, let pool = try? ThreadPool(threads: threads) else { return nil }
    let buf = UnsafeMutablePointer<Float>.allocate(capacity: count) // [count]
    defer { buf.deallocate() }
    for k in 0..<count { buf[k] = Float(k & 7) }
    let per = count / threads
    var best = Double.infinity
    var sink: Float = 0
    for _ in 0..<reps {
        let t0 = clock()
        pool.run(tasks: threads) { task, _ in
            let s = lk_stream_sum(buf + task * per, Int64(per))
            if s == -1 { sink += s }
        }
        best = min(best, clock() - t0)
    }
    return Double(per * threads * 4) / best / 1e9
}
