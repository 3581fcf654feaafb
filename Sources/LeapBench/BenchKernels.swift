// leap-bench kernels: matvec (decode) and matmul (prefill) throughput per weight type at model shapes,
// next to the measured memory bandwidth, plus thread-pool dispatch overhead.
//
//   leap-bench kernels [--threads 1,2] [--types q4_0,q8_0,...] [--isa scalar|avx2|avx-vnni|avx512] [--quick] [--cpu-time]
//                      [--few]   (only the few-token matmuls of stepped decode: cost per weight vs one token)
import CLeapKernels
import Glibc
import LeapGGUF
import LeapKernels

/// The clock used for all figures: wall time, or with `--cpu-time` the process CPU time divided by the thread
/// count (on a shared, overloaded machine this approximates what the kernels achieve while they run).
nonisolated(unsafe) private var useCPUTime = false
nonisolated(unsafe) private var cpuTimeThreads = 1

private func nowSeconds() -> Double {
    var ts = timespec()
    if useCPUTime {
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
        return (Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9) / Double(cpuTimeThreads)
    }
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

/// Runs `body` repeatedly for at least `minTime` seconds (after one warm-up call); returns seconds per call.
private func timePerCall(minTime: Double, _ body: () -> Void) -> Double {
    body()
    var calls = 0
    let t0 = nowSeconds()
    var t = t0
    repeat {
        body()
        calls += 1
        t = nowSeconds()
    } while t - t0 < minTime
    return (t - t0) / Double(calls)
}

/// Random but well-formed weight bytes (finite f16 scales).
private func benchWeights(_ type: GGMLType, rows: Int, cols: Int, seed: UInt64) -> UnsafeMutableRawPointer {
    let bytes = rows * (type.rowBytes(cols) ?? 0)
    let p = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64)
    var s = seed
    let words = p.bindMemory(to: UInt64.self, capacity: bytes / 8)
    for i in 0..<(bytes / 8) {
        s &+= 0x9E37_79B9_7F4A_7C15
        var z = s
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        words[i] = z ^ (z >> 27)
    }
    // overwrite every 16-bit value that could be an f16 scale with a small finite number: simplest is to
    // make all f16/bf16 payloads finite; for quantized types fix the scale fields per block.
    let fields: [Int]
    switch type {
    case .q4_0, .q5_0, .q8_0: fields = [0]
    case .q4_1, .q5_1, .q4_K, .q5_K: fields = [0, 2]
    case .q2_K: fields = [80, 82]
    case .q3_K: fields = [108]
    case .q6_K: fields = [208]
    default: fields = []
    }
    let raw = p.assumingMemoryBound(to: UInt8.self)
    if type == .f32 {
        let f = p.assumingMemoryBound(to: Float.self)
        for i in 0..<(bytes / 4) { f[i] = Float(Int(raw[i * 4]) - 128) / 1024 }
    } else if type == .f16 || type == .bf16 {
        let h = p.assumingMemoryBound(to: UInt16.self)
        for i in 0..<(bytes / 2) { h[i] = h[i] & 0x3fff } // exponent < max: finite
    } else {
        for b in 0..<(bytes / type.blockBytes) {
            for off in fields {
                raw[b * type.blockBytes + off] = 0x00
                raw[b * type.blockBytes + off + 1] = 0x1c // f16 0x1c00 ≈ 0.0039
            }
        }
    }
    return p
}

func benchKernels(_ args: [String]) {
    var threadCounts = [1, 2]
    var types: [GGMLType] = [.q4_0, .q4_1, .q5_0, .q5_1, .q8_0, .q2_K, .q3_K, .q4_K, .q5_K, .q6_K, .f16, .bf16, .f32]
    var quick = false, fewOnly = false
    var i = 0
    while i < args.count {
        switch args[i] {
        case "--threads" where i + 1 < args.count:
            threadCounts = args[i + 1].split(separator: ",").compactMap { Int($0) }
            i += 1
        case "--types" where i + 1 < args.count:
            let names = args[i + 1].lowercased().split(separator: ",").map(String.init)
            types = GGMLType.allCases.filter { names.contains($0.name.lowercased()) }
            i += 1
        case "--isa" where i + 1 < args.count:
            if let isa = KernelISA.allCases.first(where: { $0.name.hasPrefix(args[i + 1]) }), isa.select() {
            } else { print("isa \(args[i + 1]) not available") }
            i += 1
        case "--quick": quick = true
        case "--few": fewOnly = true
        case "--cpu-time": useCPUTime = true
        default: print("unknown option \(args[i])")
        }
        i += 1
    }
    let minTime = quick ? 0.1 : 0.3
    print("kernels: isa \(KernelISA.current.name), physical cores \(ThreadPool.physicalCores), clock: \(useCPUTime ? "process CPU time / threads" : "wall")")
    var load = [Double](repeating: 0, count: 3)
    if getloadavg(&load, 3) == 3 { print("load average: \(fmt(load[0], 2)) (machine shared with other processes?)") }
    if fewOnly { return benchFewTokens(types: types, threadCounts: threadCounts, minTime: minTime) }

    // ---- memory bandwidth: streaming read of 256 MiB or twice the last-level cache ----
    let dramBytes = beyondLastLevelCache(minimum: 256 << 20)
    var bandwidth: [Int: Double] = [:]
    for nt in threadCounts {
        cpuTimeThreads = nt
        guard let bw = streamReadBandwidth(bytes: dramBytes, threads: nt, clock: nowSeconds) else { continue }
        bandwidth[nt] = bw
        print("memory bandwidth (stream read, \(nt) thread\(nt > 1 ? "s" : "")): \(fmt(bw)) GB/s")
    }

    // ---- thread pool dispatch overhead ----
    // Wall-clock latency of one run of empty tasks (one per thread): the mean includes the runs where a
    // worker was descheduled by other processes; the median and minimum show the cost when it was not.
    for nt in threadCounts where nt > 1 {
        guard let pool = try? ThreadPool(threads: nt) else { continue }
        var counter = 0
        for gapMicros in [0.0, 20.0] {
            var samples: [Double] = []
            var ts = timespec()
            func wall() -> Double {
                clock_gettime(CLOCK_MONOTONIC, &ts)
                return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
            }
            let end = wall() + minTime
            while wall() < end && samples.count < 200_000 {
                if gapMicros > 0 { // single-threaded caller work between runs (decode: norms, rope, ...)
                    let g0 = wall()
                    while wall() - g0 < gapMicros * 1e-6 {}
                }
                let t0 = wall()
                pool.run(tasks: nt) { task, _ in if task == 0 { counter &+= 1 } }
                samples.append(wall() - t0)
            }
            samples.sort()
            let mean = samples.reduce(0, +) / Double(max(1, samples.count))
            let median = samples.isEmpty ? 0 : samples[samples.count / 2]
            let p10 = samples.isEmpty ? 0 : samples[samples.count / 10]
            print("thread pool dispatch (\(nt) threads, empty tasks, \(gapMicros == 0 ? "back to back" : "after 20 µs of caller work")): median \(fmt(median * 1e6, 2)) µs, p10 \(fmt(p10 * 1e6, 2)) µs, mean \(fmt(mean * 1e6, 2)) µs (\(samples.count) runs, wall clock)")
        }
    }

    // ---- matvec / matmul per type and shape ----
    // (cols, rows): ggml ne = [cols, rows], e.g. SmolLM2-135M ffn_up [576, 1536], output [576, 49152];
    // LFM2-350M ffn_up [1024, 4608], ffn_down [4608, 1024]; LFM2-1.2B ffn_up [2048, 8192], ffn_down [8192, 2048]
    let shapes: [(Int, Int)] = [(576, 1536), (1536, 576), (640, 2048), (2048, 640), (576, 49152), (1024, 4608), (4608, 1024),
                                (2048, 8192), (8192, 2048)]
    print("")
    let cycled = beyondLastLevelCache(minimum: 128 << 20)
    print("matvec (decode, 1 token): weights streamed from DRAM (copies of \(cycled >> 20) MiB in all cycled, the last-level cache being \(lastLevelCacheBytes >> 20) MiB)")
    print("type   shape(in×out)   threads   GB/s   %bw   GFLOP/s   µs/call")
    for type in types {
        for (cols, rows) in shapes where cols % type.blockSize == 0 {
            let size = rows * (type.rowBytes(cols) ?? 0)
            let copies = max(1, cycled / size)
            let bufs = (0..<copies).map { benchWeights(type, rows: rows, cols: cols, seed: UInt64($0)) }
            defer { bufs.forEach { $0.deallocate() } }
            let store = PackedMatrices() // the layout models use on this path (Q4_0 / Q8_0 on AVX2: 8-row groups)
            guard let ws = try? bufs.map({ store.packed(try WeightMatrix(type: type, rows: rows, cols: cols, data: $0)) }) else { continue }
            let x = (0..<cols).map { Float(($0 * 37) % 17) - 8 }
            var y = [Float](repeating: 0, count: rows)
            for nt in threadCounts {
                guard let pool = try? ThreadPool(threads: nt) else { continue }
                cpuTimeThreads = nt
                var k = 0
                let t = timePerCall(minTime: minTime) {
                    Kernels.matvec(ws[k], x: x, y: &y, pool: pool)
                    k = (k + 1) % copies
                }
                let gbs = Double(size) / t / 1e9
                let pct = 100 * gbs / (bandwidth[nt] ?? .infinity)
                print("\(pad(type.name, 6)) \(pad("\(cols)×\(rows)", 15)) \(pad("\(nt)", 9)) \(pad(fmt(gbs), 6)) \(pad(fmt(pct, 0) + "%", 5)) \(pad(fmt(2 * Double(rows * cols) / t / 1e9), 9)) \(fmt(t * 1e6))")
            }
        }
    }

    print("")
    print("matmul (prefill): Y[n, out] = X[n, in] · Wᵀ, activations quantized once per call")
    print("type   shape(in×out)   tokens  threads   GFLOP/s   ms/call")
    let tokenCounts = quick ? [64] : [64, 512]
    for type in types {
        for (cols, rows) in shapes where cols % type.blockSize == 0 {
            let wbuf = benchWeights(type, rows: rows, cols: cols, seed: 99)
            defer { wbuf.deallocate() }
            let store = PackedMatrices()
            guard let w = try? store.packed(WeightMatrix(type: type, rows: rows, cols: cols, data: wbuf)) else { continue }
            for n in tokenCounts {
                if rows * n > 64 << 20 / 4 * 4 && rows > 10000 && n > 64 { continue } // skip the 512-token logits case
                let x = (0..<(n * cols)).map { Float(($0 * 37) % 17) - 8 }
                var y = [Float](repeating: 0, count: n * rows)
                for nt in threadCounts {
                    guard let pool = try? ThreadPool(threads: nt) else { continue }
                    cpuTimeThreads = nt
                    let t = timePerCall(minTime: minTime) { Kernels.matmul(w, x: x, y: &y, nTokens: n, pool: pool) }
                    print("\(pad(type.name, 6)) \(pad("\(cols)×\(rows)", 15)) \(pad("\(n)", 7)) \(pad("\(nt)", 9)) \(pad(fmt(2 * Double(rows * cols * n) / t / 1e9), 9)) \(fmt(t * 1e3, 2))")
                }
            }
        }
    }
}

/// Matmuls of a few tokens (conversations decoded together): time per call of n tokens over that of one
/// token, i.e. the cost per weight relative to one token, with the weights streamed from DRAM.
private func benchFewTokens(types: [GGMLType], threadCounts: [Int], minTime: Double) {
    let counts = [1, 2, 4, 8, 15, 16], most = 16
    print("")
    print("matmul of a few tokens (stepped decode): weights streamed from DRAM, time per call relative to 1 token")
    print("type   shape(in×out)   threads   1 token µs   " + counts.dropFirst().map { pad("\($0)", 7) }.joined())
    for type in types where [.q4_0, .q4_1, .q5_0, .q5_1, .q8_0, .q4_K, .q5_K, .q6_K].contains(type) {
        // Q6_K: the output matrix of the K_M files (vocabulary 65536) and the FFN's; the others the FFN's
        for (cols, rows) in type == .q6_K ? [(2048, 65536), (8192, 2048)] : [(2048, 8192), (8192, 2048)] {
            let size = rows * (type.rowBytes(cols) ?? 0)
            let copies = max(2, beyondLastLevelCache(minimum: 384 << 20) / size)
            let bufs = (0..<copies).map { benchWeights(type, rows: rows, cols: cols, seed: UInt64($0)) }
            defer { bufs.forEach { $0.deallocate() } }
            let store = PackedMatrices() // as models hold them on this path
            guard let ws = try? bufs.map({ store.packed(try WeightMatrix(type: type, rows: rows, cols: cols, data: $0)) }) else { continue }
            let x = (0..<(most * cols)).map { Float(($0 * 37) % 17) - 8 }
            var y = [Float](repeating: 0, count: most * rows)
            for nt in threadCounts {
                guard let pool = try? ThreadPool(threads: nt) else { continue }
                cpuTimeThreads = nt
                let per = counts.map { n in
                    var k = 0
                    return timePerCall(minTime: minTime) {
                        Kernels.matmul(ws[k], x: x, y: &y, nTokens: n, pool: pool)
                        k = (k + 1) % copies
                    }
                }
                print("\(pad(type.name, 6)) \(pad("\(cols)×\(rows)", 15)) \(pad("\(nt)", 9)) \(pad(fmt(per[0] * 1e6), 12)) "
                      + per.dropFirst().map { pad(fmt($0 / per[0], 2) + "x", 7) }.joined())
            }
        }
    }
}

private func fmt(_ v: Double, _ digits: Int = 1) -> String {
    if !v.isFinite { return "-" }
    var p = 1.0
    for _ in 0..<digits { p *= 10 }
    let r = (v * p).rounded() / p
    if digits == 0 { return String(Int(r)) }
    var s = String(r)
    if let dot = s.firstIndex(of: ".") {
        let decimals = s.distance(from: dot, to: s.endIndex) - 1
        if decimals < digits { s += String(repeating: "0", count: digits - decimals) }
    }
    return s
}

private func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s : s + String(repeating: " ", count: n - s.count) }
