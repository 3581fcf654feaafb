// leap-bench audio: resampling throughput for common rate pairs (60 s of audio each), plus libsoxr HQ's
// figures on the same machine when python3 with the `soxr` package is present
// (scripts/bench_audio_soxr.py, run as a child process since Swift cannot call soxr directly).
import Glibc
import LeapAudio

private func nowSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

/// 60 s test signal: a few tones plus low-level noise (a deterministic LCG).
private func testSignal(rate: Int, seconds: Int) -> [Float] {
    var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
    return (0..<(rate * seconds)).map { i in
        seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        let noise = Double(Int64(bitPattern: seed >> 11) - (1 << 52)) / Double(1 << 52)
        let t = Double(i) / Double(rate)
        return Float(0.3 * sin(2 * Double.pi * 440 * t) + 0.2 * sin(2 * Double.pi * 3_100 * t) + 0.01 * noise)
    }
}

func benchAudio(_ arguments: [String]) {
    let seconds = 60
    var pairs = [(8_000, 16_000), (11_025, 16_000), (22_050, 16_000), (24_000, 16_000), (32_000, 16_000),
                 (44_100, 16_000), (48_000, 16_000), (96_000, 16_000), (44_056, 16_000), (16_000, 24_000),
                 (24_000, 48_000)]
    // `leap-bench audio FROM TO [RUNS]` measures one pair only (RUNS > 5: for a profiler).
    var runs = 5
    if arguments.count >= 2, let a = Int(arguments[0]), let b = Int(arguments[1]) { pairs = [(a, b)] }
    if arguments.count == 3, let n = Int(arguments[2]), n > 0 { runs = n }
    print("resample \(seconds) s of audio (best of \(runs); thread CPU time, includes filter design; one thread)")
    print("(polyphase designs are cached process-wide, so runs 2-5 reuse the first's; 'first' is the first run)")
    print("from -> to        time ms    Msamples/s in   x real time   design ms   first ms  first design ms")
    for (fin, fout) in pairs {
        let input = testSignal(rate: fin, seconds: seconds)
        var best = Double.infinity, design = Double.infinity
        var first = 0.0, firstDesign = 0.0
        var outCount = 0
        for run in 0..<runs {
            let t0 = nowSeconds()
            guard let r = try? Resampler(inputRate: fin, outputRate: fout) else { return }
            let t1 = nowSeconds()
            var out = r.process(input)
            out.append(contentsOf: r.flush())
            let t2 = nowSeconds()
            outCount = out.count
            best = min(best, t2 - t0)
            design = min(design, t1 - t0)
            if run == 0 { (first, firstDesign) = (t2 - t0, t1 - t0) }
        }
        let label = "\(fin) -> \(fout)".padding(16)
        print("\(label)  \(fmt(best * 1e3, 8))   \(fmt(Double(input.count) / best / 1e6, 10))   \(fmt(Double(seconds) / best, 11))   \(fmt(design * 1e3, 8))   \(fmt(first * 1e3, 8))   \(fmt(firstDesign * 1e3, 8))   (\(outCount) out)")
    }
    let script = "scripts/bench_audio_soxr.py"
    if arguments.count >= 2 { return }
    if access(script, R_OK) == 0 {
        print("\nlibsoxr (python soxr, HQ) on the same machine:")
        fflush(stdout)
        _ = system("python3 \(script) 2>&1")
    } else {
        print("\n(run `python3 \(script)` from the repository root for libsoxr's figures)")
    }
}

private func fmt(_ v: Double, _ width: Int) -> String {
    let s = v >= 100 ? String(Int(v.rounded())) : String(Double(Int((v * 100).rounded())) / 100)
    return s.padding(width)
}

extension String {
    fileprivate func padding(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
