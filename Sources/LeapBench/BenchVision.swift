// leap-bench vision [--threads 2] [--reps 3] [--dir /tmp/leap-bench-vision] [--types f16,q8_0]
//                   [--images 512x512,1024x768] [--no-peer]
//
// LFM2-VL vision encoder time (tower + pixel-unshuffle + projector) for a 512x512 image (one tile, 256
// tokens) and a 1024x768 one (3x2 tiles of 512x512 plus a 576x416 thumbnail, 1770 tokens), on random-weight
// projectors of LFM2-VL-450M's shapes that scripts/bench_vision_mtmd.py generates (never committed), and
// llama.cpp mtmd's mtmd_encode_chunk time for the same images when llama-cpp-python is installed. The CPU
// time is the caller's and the pool workers' (with --threads 1 the encode's own work, whatever else runs).
// The python is $LEAP_LLAMA_PYTHON, else python3 (PeerScripts.swift).
//
// Each encode's rate: its products' flops (encodeFlops) over its time, and that rate as a share of the FMA
// peak measured just before on the same threads (lk_fma_peak_flops on every pool thread at once), for
// libleap and for mtmd (the same products on the same images). Q8_0's linear layers multiply integers
// (vpdpbusd, sdot), so its share of the float peak can pass 100%. --no-peer skips mtmd.
import CLeapMediaKernels
import Glibc
import LeapKernels
import LeapVision

/// The flops of an encode's matrix products (an FMA lane counts 2), for a tile of T = (height/p)·(width/p)
/// patches, hidden size D, MLP width F, L blocks, downsample factor f, projector f²·D -> P -> E:
///   patch embedding           2·T·(3·p·p)·D
///   per block: Q, K, V, out   4 · 2·T·D·D
///              MLP up, down   2 · 2·T·D·F
///              attention      2 · 2·T·T·D  (scores q·k and probabilities x values, all heads: H·dh = D)
///   projector (n = T/f² rows) 2·n·f²D·P + 2·n·P·E
/// Norms, GELU, softmax and residuals are not counted.
private func encodeFlops(_ enc: VisionEncoder, width: Int, height: Int) -> Double {
    let p = Double(enc.patchSize), f = Double(enc.downsampleFactor)
    let T = Double(height / enc.patchSize) * Double(width / enc.patchSize)
    let D = Double(enc.hiddenSize), F = Double(enc.config.feedForwardSize), L = Double(enc.layerCount)
    let P = Double(enc.projectorHiddenSize), E = Double(enc.outputDim), n = T / (f * f)
    let patch = 2 * T * 3 * p * p * D
    let block = 4 * 2 * T * D * D + 2 * 2 * T * D * F + 2 * 2 * T * T * D
    let projector = 2 * n * f * f * D * P + 2 * n * P * E
    return patch + L * block + projector
}

/// The pool's threads at their FMA peak (lk_fma_peak_flops on each at once): flop/s together (the sum of their
/// flops over the wall time) and flop/s per CPU second (over the sum of their CPU times, which other processes
/// on the same cores do not inflate).
private func fmaPeak(_ pool: ThreadPool, seconds: Double = 0.5) -> (wall: Double, cpu: Double) {
    let n = pool.threadCount
    let flops = UnsafeMutablePointer<Double>.allocate(capacity: 2 * n) // [thread]: flops, CPU seconds
    defer { flops.deallocate() }
    flops.initialize(repeating: 0, count: 2 * n)
    let t0 = now()
    pool.run(tasks: n) { _, thread in
        let c0 = threadCPU()
        flops[2 * thread] += lk_fma_peak_flops(seconds)
        flops[2 * thread + 1] += threadCPU() - c0
    }
    let wall = now() - t0
    let total = (0..<n).reduce(0) { $0 + flops[2 * $1] }, cpu = (0..<n).reduce(0) { $0 + flops[2 * $1 + 1] }
    return (total / wall, total / cpu)
}

private func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

/// CPU time of the calling thread.
private func threadCPU() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

/// A tile of `width` x `height` pixels with values in [-1, 1] (the time does not depend on them).
private func tile(width: Int, height: Int) -> PreprocessedImage.Tile {
    let px = (0..<width * height * 3).map { i in Float((i &* 2_654_435_761) % 255) / 127.5 - 1 }
    return PreprocessedImage.Tile(width: width, height: height, pixels: px)
}

func benchVision(_ args: [String]) {
    let threads = stringOption(args, "--threads").flatMap { Int($0) } ?? 2
    let reps = max(1, stringOption(args, "--reps").flatMap { Int($0) } ?? 3)
    let dir = stringOption(args, "--dir") ?? "/tmp/leap-bench-vision"
    let types = (stringOption(args, "--types") ?? "f16,q8_0").split(separator: ",").map(String.init)
    let imageNames = stringOption(args, "--images") ?? "512x512,1024x768"
    let py = llamaPython, script = repoScript("bench_vision_mtmd.py")
    let peer = !args.contains("--no-peer")

    if types.contains(where: { access("\(dir)/mmproj-\($0).gguf", R_OK) != 0 }) {
        print("generating LFM2-VL-450M-shaped random projectors in \(dir) (\(py) \(script) make)...")
        fflush(stdout)
        guard system("'\(py)' '\(script)' make '\(dir)'") == 0 else {
            fputs("error: could not generate the projectors (needs numpy and gguf-py)\n", stderr)
            exit(1)
        }
    }
    let single = PreprocessedImage(tiles: [tile(width: 512, height: 512)], grid: nil)
    let multi = PreprocessedImage(tiles: Array(repeating: tile(width: 512, height: 512), count: 6) + [tile(width: 576, height: 416)],
                                  grid: (rows: 2, cols: 3))
    let images: [(String, PreprocessedImage)] = [("512x512", single), ("1024x768", multi)].filter {
        imageNames.split(separator: ",").contains(Substring($0.0))
    }
    print("LFM2-VL vision encoder: SigLIP2 768-d x 12 blocks, projector 3072 -> 2560 -> 1024; \(threads) threads, best of \(reps)")
    do {
        let pool = try ThreadPool(threads: threads)
        for type in types {
            let enc = try VisionEncoder.load(path: "\(dir)/mmproj-\(type).gguf")
            let ref = !peer ? [:] : keyValues("'\(py)' '\(script)' time '\(dir)' \(type) --threads \(threads) --reps \(reps) --images '\(imageNames)' 2>/dev/null")
            for (name, image) in images {
                _ = try enc.encode(image, pool: pool)  // first touch of the weights
                let flops = image.tiles.reduce(0) { $0 + encodeFlops(enc, width: $1.width, height: $1.height) }
                let peak = fmaPeak(pool)
                var best = Double.infinity, bestCPU = Double.infinity
                var rows = 0
                for _ in 0..<reps {
                    let t0 = now(), c0 = threadCPU() + pool.workerCPUSeconds
                    rows = try enc.encode(image, pool: pool).count / enc.outputDim
                    best = min(best, now() - t0)
                    bestCPU = min(bestCPU, threadCPU() + pool.workerCPUSeconds - c0)
                }
                func rate(_ seconds: Double) -> String {
                    "\(fmt(flops / seconds * 1e-9, 1)) GFLOP/s = \(fmt(100 * flops / seconds / peak.wall, 1))% of peak"
                }
                var line = "\(type) \(name) (\(image.tiles.count) tiles, \(rows) tokens, \(fmt(flops * 1e-9, 1)) GFLOP;"
                line += " FMA peak \(fmt(peak.wall * 1e-9, 1)) GFLOP/s, \(fmt(peak.cpu * 1e-9, 1)) per CPU second):"
                line += " \(fmt(best * 1e3, 1)) ms (CPU \(fmt(bestCPU * 1e3, 1)) ms), \(rate(best))"
                line += " (CPU time: \(fmt(100 * flops / bestCPU / peak.cpu, 1))%)"
                if let m = ref["mtmd_\(name)_ms"] {
                    line += "; llama.cpp mtmd \(fmt(m, 1)) ms (\(Int(ref["mtmd_\(name)_tokens"] ?? 0)) tokens), \(rate(m * 1e-3))"
                    if let mc = ref["mtmd_\(name)_cpu_ms"] {
                        line += " (CPU \(fmt(mc, 1)) ms: \(fmt(100 * flops / (mc * 1e-3) / peak.cpu, 1))%)"
                    }
                    line += ", ratio \(fmt(m / (best * 1e3), 2))x"
                    if let mc = ref["mtmd_\(name)_cpu_ms"] { line += ", by CPU time \(fmt(mc / (bestCPU * 1e3), 2))x" }
                } else {
                    line += peer ? " (llama.cpp mtmd: not available)" : ""
                }
                print(line)
                fflush(stdout)
            }
        }
    } catch {
        fputs("error: \(error)\n", stderr)
        exit(1)
    }
}

private func fmt(_ x: Double, _ digits: Int) -> String {
    var buf = [CChar](repeating: 0, count: 64)
    _ = withVaList([x]) { vsnprintf(&buf, 64, "%.\(digits)f", $0) }
    return String(cString: buf)
}
