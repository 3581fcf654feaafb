// leap-bench vision [--threads 2] [--reps 3] [--dir /tmp/leap-bench-vision] [--types f16,q8_0]
//
// LFM2-VL vision encoder time (tower + pixel-unshuffle + projector) for a 512x512 image (one tile, 256
// tokens) and a 1024x768 one (3x2 tiles of 512x512 plus a 576x416 thumbnail, 1770 tokens), on random-weight
// projectors of LFM2-VL-450M's shapes that scripts/bench_vision_mtmd.py generates (never committed), and
// llama.cpp mtmd's mtmd_encode_chunk time for the same images when llama-cpp-python is installed. The CPU
// time is the caller's and the pool workers' (with --threads 1 the encode's own work, whatever else runs).
// The python is $LEAP_LLAMA_PYTHON, else python3 (PeerScripts.swift).
import Glibc
import LeapKernels
import LeapVision

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
    func opt(_ name: String) -> String? {
        if let i = args.firstIndex(of: name), i + 1 < args.count { return args[i + 1] }
        return nil
    }
    let threads = opt("--threads").flatMap { Int($0) } ?? 2
    let reps = max(1, opt("--reps").flatMap { Int($0) } ?? 3)
    let dir = opt("--dir") ?? "/tmp/leap-bench-vision"
    let types = (opt("--types") ?? "f16,q8_0").split(separator: ",").map(String.init)
    let py = llamaPython, script = repoScript("bench_vision_mtmd.py")

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
    let images: [(String, PreprocessedImage)] = [("512x512", single), ("1024x768", multi)]
    print("LFM2-VL vision encoder: SigLIP2 768-d x 12 blocks, projector 3072 -> 2560 -> 1024; \(threads) threads, best of \(reps)")
    do {
        let pool = try ThreadPool(threads: threads)
        for type in types {
            let enc = try VisionEncoder.load(path: "\(dir)/mmproj-\(type).gguf")
            let ref = keyValues("'\(py)' '\(script)' time '\(dir)' \(type) --threads \(threads) --reps \(reps) 2>/dev/null")
            for (name, image) in images {
                _ = try enc.encode(image, pool: pool)  // first touch of the weights
                var best = Double.infinity, bestCPU = Double.infinity
                var rows = 0
                for _ in 0..<reps {
                    let t0 = now(), c0 = threadCPU() + pool.workerCPUSeconds
                    rows = try enc.encode(image, pool: pool).count / enc.outputDim
                    best = min(best, now() - t0)
                    bestCPU = min(bestCPU, threadCPU() + pool.workerCPUSeconds - c0)
                }
                var line = "\(type) \(name) (\(image.tiles.count) tiles, \(rows) tokens): \(fmt(best * 1e3, 1)) ms"
                line += " (CPU \(fmt(bestCPU * 1e3, 1)) ms)"
                if let m = ref["mtmd_\(name)_ms"] {
                    line += ", llama.cpp mtmd \(fmt(m, 1)) ms (\(Int(ref["mtmd_\(name)_tokens"] ?? 0)) tokens), ratio \(fmt(m / (best * 1e3), 2))x"
                } else {
                    line += " (llama.cpp mtmd: not available)"
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
