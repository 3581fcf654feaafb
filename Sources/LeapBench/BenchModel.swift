// leap-bench model MODEL.gguf [--threads N] [--prompt 512] [--gen 128] [--reps 3] [--compare]
//
// Prompt processing (one eval of N tokens), time to first token (that eval + the first argmax),
// generation (N tokens one at a time, greedy, after a 16-token prompt), load time and peak RSS (VmHWM).
// With --compare, runs scripts/bench_llamacpp.py ($LEAP_LLAMA_PYTHON, else python3) on the same file / tokens /
// threads and prints ratios.
import Glibc
import LeapModels

private func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

func peakRSSMB() -> Double {
    guard let f = fopen("/proc/self/status", "r") else { return 0 }
    defer { fclose(f) }
    var line = [CChar](repeating: 0, count: 256)
    while fgets(&line, 256, f) != nil {
        let s = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if s.hasPrefix("VmHWM:") {
            let kb = s.split(separator: " ").compactMap { Double($0) }.first ?? 0
            return kb / 1024
        }
    }
    return 0
}

/// Same ids as scripts/bench_llamacpp.py: 64-bit LCG, ids in [16, nVocab).
func tokenIDs(_ n: Int, _ nVocab: Int, seed: UInt64 = 12345) -> [Int32] {
    var s: UInt64 = seed
    return (0..<n).map { _ in
        s = s &* 6364136223846793005 &+ 1442695040888963407
        return Int32(16 + Int(s >> 33) % (nVocab - 16))
    }
}

func greedyToken(_ row: UnsafeBufferPointer<Float>) -> Int32 {
    var best = 0
    for i in 1..<row.count where row[i] > row[best] { best = i }
    return Int32(best)
}

private func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }

/// Runs the llama.cpp script and returns its `key: value` figures.
private func runLlamaCpp(_ path: String, threads: Int, prompt: Int, gen: Int, reps: Int) -> [String: Double] {
    runLlamaCppScript("'\(path)' --threads \(threads) --prompt \(prompt) --gen \(gen) --reps \(reps)")
}

/// Runs scripts/bench_llamacpp.py with `arguments` (shell words) under the peer's python and returns its
/// `key: value` figures.
func runLlamaCppScript(_ arguments: String) -> [String: Double] {
    keyValues("'\(llamaPython)' '\(repoScript("bench_llamacpp.py"))' \(arguments) 2>/dev/null")
}

func benchModel(_ args: [String]) {
    guard let path = args.first else {
        fputs("usage: leap-bench model MODEL.gguf [--threads N] [--prompt 512] [--gen 128] [--reps 3] [--compare]\n", stderr)
        exit(2)
    }
    let threads = intOption(args, "--threads", 2), nPrompt = intOption(args, "--prompt", 512), nGen = intOption(args, "--gen", 128), reps = max(1, intOption(args, "--reps", 3))
    do {
        let t0 = now()
        let model = try LanguageModel.load(path: path, threads: threads)
        let load = now() - t0
        let cfg = model.config
        var opts = ContextOptions(contextSize: nPrompt + nGen + 32, threads: threads)
        opts.maxBatch = nPrompt
        let ctx = try model.makeContext(opts)
        let prompt = tokenIDs(nPrompt, cfg.nVocab)
        var pp: [Double] = [], ttft: [Double] = [], tg: [Double] = []
        for _ in 0..<reps {
            ctx.reset()
            let a = now()
            try ctx.eval(tokens: prompt)
            _ = greedyToken(try ctx.logits())
            let dt = now() - a
            pp.append(Double(nPrompt) / dt)
            ttft.append(dt)

            ctx.reset()
            try ctx.eval(tokens: Array(prompt[0..<min(16, nPrompt)]))
            var tok = greedyToken(try ctx.logits())
            let b = now()
            for _ in 0..<nGen {
                try ctx.eval(tokens: [tok])
                tok = greedyToken(try ctx.logits())
            }
            tg.append(Double(nGen) / (now() - b))
        }
        let rss = peakRSSMB() // before the bandwidth probe's buffer
        let bytes = Double(model.weightBytesPerToken)
        let tgMed = median(tg)
        print("model: \(cfg.name) (\(cfg.architecture.rawValue)), \(cfg.nLayer) layers, vocab \(cfg.nVocab), threads \(ctx.threadCount)")
        var load3 = [Double](repeating: 0, count: 3)
        if getloadavg(&load3, 3) == 3 { print("load average: \(format2(load3[0])) \(format2(load3[1])) \(format2(load3[2]))") }
        let decodeGBs = bytes * tgMed / 1e9
        print("weights read per token: \(format1(bytes / 1e6)) MB -> \(format1(decodeGBs)) GB/s at the measured decode rate")
        // Decode reads every weight once per token: the same threads' plain streaming read bounds it.
        if let bw = streamReadBandwidth(bytes: 2 << 30, threads: ctx.threadCount, clock: now) {
            print("memory bandwidth (stream read of 2 GiB, \(ctx.threadCount) threads): \(format1(bw)) GB/s; decode at \(format1(100 * decodeGBs / bw))% of it")
        }
        print("load: \(format3(load)) s")
        print("prompt processing (\(nPrompt) tokens): \(format1(median(pp))) tok/s")
        print("time to first token (\(nPrompt)-token prompt): \(format3(median(ttft))) s")
        print("generation (\(nGen) tokens): \(format1(tgMed)) tok/s")
        print("peak RSS: \(format1(rss)) MB")
        if args.contains("--compare") {
            let ref = runLlamaCpp(path, threads: threads, prompt: nPrompt, gen: nGen, reps: reps)
            guard let rpp = ref["pp_tok_s"], let rtg = ref["tg_tok_s"] else {
                print("llama.cpp: not available (pip install llama-cpp-python)")
                return
            }
            print("llama.cpp load: \(format3(ref["load_s"] ?? 0)) s")
            print("llama.cpp prompt processing: \(format1(rpp)) tok/s (ratio \(format2(median(pp) / rpp))x)")
            print("llama.cpp time to first token: \(format3(ref["ttft_s"] ?? 0)) s")
            print("llama.cpp generation: \(format1(rtg)) tok/s (ratio \(format2(tgMed / rtg))x)")
            print("llama.cpp peak RSS (python process): \(format1(ref["peak_rss_mb"] ?? 0)) MB")
        }
    } catch {
        fputs("error: \(error)\n", stderr)
        exit(1)
    }
}

private func format1(_ x: Double) -> String { fmt(x, 1) }
private func format2(_ x: Double) -> String { fmt(x, 2) }
private func format3(_ x: Double) -> String { fmt(x, 3) }
private func fmt(_ x: Double, _ digits: Int) -> String {
    var buf = [CChar](repeating: 0, count: 64)
    _ = withVaList([x]) { vsnprintf(&buf, 64, "%.\(digits)f", $0) }
    return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
