// leap-bench audio-encoder [MMPROJ.gguf ...] [--threads 2] [--reps 3] [--seconds 10,60] [--no-compare]
//
// LFM2-Audio's audio encoder (log-mel + FastConformer + adapter) on 16 kHz samples: the time to turn a clip
// into embedding rows, median of the reps after one warm-up. Without files, writes random-weight mmprojs of
// the real encoder's shapes (d_model 512, 17 layers, 8 heads, FFN 2048, 256 subsampling channels, adapter
// 512 → 2048 → 2048) in F16 and Q8_0 to /tmp/leap-bench-audio-encoder (scripts/bench_audio_encoder_mtmd.py
// make-model). Unless --no-compare, times llama.cpp's mtmd on the same file, samples and threads
// (scripts/bench_audio_encoder_mtmd.py time, run with $LEAP_LLAMA_PYTHON, else python3) and prints the ratios.
import Glibc
import LeapAudioEncoder
import LeapGGUF

/// scripts/bench_audio_encoder_mtmd.py under the peer's python (its output kept off the terminal).
private var helper: String { "'\(llamaPython)' '\(repoScript("bench_audio_encoder_mtmd.py"))'" }
import LeapKernels

private func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

/// The bench signal (same as the Python script): a swept tone plus 64-bit LCG noise.
private func benchSignal(_ n: Int) -> [Float] {
    var state: UInt64 = 12345
    return (0..<n).map { i in
        state = state &* 6364136223846793005 &+ 1442695040888963407
        let noise = Double(Int((state >> 40) % 2001) - 1000) / 1000
        let x = Double(i)
        return Float(0.3 * sin(x * (0.05 + 1e-5 * Double(i % 160_000))) + 0.02 * noise)
    }
}

private func fmtNumber(_ x: Double, _ digits: Int) -> String {
    var buf = [CChar](repeating: 0, count: 64)
    _ = withVaList([x]) { vsnprintf(&buf, 64, "%.\(digits)f", $0) }
    return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

func benchAudioEncoder(_ args: [String]) {
    var files: [String] = []
    var threads = 2, reps = 3, compare = true
    var seconds: [Double] = [10, 60]
    var i = 0
    while i < args.count {
        switch args[i] {
        case "--threads": i += 1; threads = Int(args[i]) ?? threads
        case "--reps": i += 1; reps = max(1, Int(args[i]) ?? reps)
        case "--seconds": i += 1; seconds = args[i].split(separator: ",").compactMap { Double($0) }
        case "--no-compare": compare = false
        default: files.append(args[i])
        }
        i += 1
    }
    if files.isEmpty {
        let dir = "/tmp/leap-bench-audio-encoder"
        mkdir(dir, 0o755)
        for type in ["f16", "q8_0"] {
            let path = "\(dir)/lfm2a-real-\(type).gguf"
            if access(path, R_OK) != 0 {
                print("writing \(path) (random weights, real shapes)")
                _ = keyValues(helper + " make-model '\(path)' --type \(type) 2>/dev/null")
            }
            if access(path, R_OK) == 0 { files.append(path) }
        }
        if files.isEmpty {
            fputs("error: could not write the benchmark models (needs numpy and gguf-py for \(llamaPython))\n", stderr)
            exit(1)
        }
    }
    do {
        let pool = try ThreadPool(threads: threads)
        for path in files {
            let encoder = try AudioEncoder.load(file: GGUFFile(path: path))
            print("\(path): \(threads) threads, median of \(reps)")
            var ours: [Double: Double] = [:]
            for s in seconds {
                let samples = benchSignal(Int(s * 16_000))
                var times: [Double] = []
                for r in 0...reps {
                    let t0 = monotonicSeconds()
                    let out = try samples.withUnsafeBufferPointer { try encoder.encode(samples: $0, pool: pool) }
                    let dt = monotonicSeconds() - t0
                    if r > 0 { times.append(dt) }  // the first run warms up
                    if out.count != encoder.embeddingCount(sampleCount: samples.count) * encoder.outputDim {
                        fputs("error: \(out.count) values out of the encoder\n", stderr)
                        exit(1)
                    }
                }
                let t = times.sorted()[times.count / 2]
                ours[s] = t
                print("  libleap \(fmtNumber(s, 0)) s clip: \(fmtNumber(t * 1000, 1)) ms (\(encoder.embeddingCount(sampleCount: samples.count)) embeddings, \(fmtNumber(s / t, 1))x real time)")
            }
            guard compare else { continue }
            let secs = seconds.map { fmtNumber($0, 0) }.joined(separator: " ")
            let ref = keyValues(helper + " time '\(path)' --seconds \(secs) --threads \(threads) --reps \(reps) 2>/dev/null")
            guard !ref.isEmpty else {
                print("  llama.cpp mtmd: not available (\(llamaPython) with llama-cpp-python and its mtmd bindings)")
                continue
            }
            for s in seconds {
                let tag = "mtmd_\(fmtNumber(s, 0))s"
                guard let total = ref[tag + "_total_s"], let t = ours[s] else { continue }
                let mel = ref[tag + "_mel_s"] ?? 0, enc = ref[tag + "_encode_s"] ?? 0
                print("  llama.cpp mtmd \(fmtNumber(s, 0)) s clip: \(fmtNumber(total * 1000, 1)) ms (log-mel \(fmtNumber(mel * 1000, 1)) + encode \(fmtNumber(enc * 1000, 1)); \(Int(ref[tag + "_tokens"] ?? 0)) embeddings) -> libleap \(fmtNumber(total / t, 2))x")
            }
        }
    } catch {
        fputs("error: \(error)\n", stderr)
        exit(1)
    }
}
