// Memory bandwidth probe shared by the benchmarks: a plain streaming read of a buffer far beyond L3.
import CLeapKernels
import Glibc
import LeapKernels

/// The first line of a small text file (a sysfs attribute), without its newline; nil when it cannot be read.
private func firstLine(of path: String) -> String? {
    guard let file = fopen(path, "r") else { return nil }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 64)
    guard fgets(&line, Int32(line.count), file) != nil else { return nil }
    return String(decoding: line.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Bytes of the last-level cache of CPU 0 (the highest cache level sysfs lists), or 32 MiB when sysfs does not
/// say: working sets that must come from DRAM are sized from it (some Xeons have 260-300 MB of L3). Read once.
let lastLevelCacheBytes: Int = {
    var best = (level: 0, bytes: 32 << 20)
    for index in 0..<16 {
        let dir = "/sys/devices/system/cpu/cpu0/cache/index\(index)"
        guard let level = firstLine(of: dir + "/level").flatMap({ Int($0) }), var size = firstLine(of: dir + "/size") else { continue }
        let unit = [Character("K"): 1 << 10, "M": 1 << 20, "G": 1 << 30][size.last ?? " "] ?? 1 // "266240K", "2M"
        if unit > 1 { size.removeLast() }
        if let n = Int(size), n > 0, level >= best.level { best = (level, n * unit) }
    }
    return best.bytes
}()

/// Bytes a cycled working set takes so that it is read from DRAM: `minimum`, or twice the last-level cache.
func beyondLastLevelCache(minimum: Int) -> Int {
    max(minimum, 2 * lastLevelCacheBytes)
}

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
