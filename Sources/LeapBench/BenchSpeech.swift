// leap-bench speech [--dir DIR] [--seconds 10] [--threads 2] [--reps 3]
//
// Speech generation with LFM2.5-Audio's real shapes and random weights (files made by
// scripts/make_speech_bench_files.py in DIR, run with $LEAP_LLAMA_PYTHON, else python3, when missing):
// after a 32-token prompt, audio frames one after another as in TTS (sequential mode, the runner's sampling:
// temperature 0.8, top-k 64): backbone step on the previous frame's feedback row → depthformer (8 codebooks)
// → detokenizer (6 positions) → ISTFT. Prints the real-time factor (time to produce N seconds of audio / N),
// the time from the first audio frame's hidden state to its first samples, where a frame's time goes, and
// the CPU time a frame takes (a load-independent figure with --threads 1).
import Glibc
import LeapModels
import LeapSpeech

private func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

/// CPU seconds of the whole process (every thread, spinning workers included).
private func cpuTime() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

/// CPU seconds of the calling thread.
private func threadCPUTime() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

private func exists(_ path: String) -> Bool { access(path, R_OK) == 0 }

func benchSpeech(_ args: [String]) {
    let dir = stringOption(args, "--dir") ?? "/tmp/leap-speech-bench"
    let seconds = Double(stringOption(args, "--seconds") ?? "") ?? 10
    let threads = Int(stringOption(args, "--threads") ?? "") ?? 2
    let reps = max(1, Int(stringOption(args, "--reps") ?? "") ?? 3)
    let backbonePath = dir + "/backbone-q4_0.gguf", vocoderPath = dir + "/vocoder-q4_0.gguf"
    let tokenizerPath = dir + "/tokenizer-q4_0.gguf"
    if !exists(backbonePath) || !exists(vocoderPath) || !exists(tokenizerPath) {
        let script = repoScript("make_speech_bench_files.py")
        print("making the benchmark files in \(dir) (\(script))")
        guard system("'\(llamaPython)' '\(script)' '\(dir)'") == 0 else {
            fputs("error: \(script) failed (it needs numpy and gguf in \(llamaPython): pip install gguf)\n", stderr)
            exit(1)
        }
    }
    do {
        let backbone = try LanguageModel.load(path: backbonePath, threads: threads)
        let speech = try SpeechOutputModel(vocoderPath: vocoderPath, tokenizerPath: tokenizerPath)
        let config = SpeechConfig(mode: .sequential, seed: 1)
        let frames = Int((seconds * 12.5).rounded(.up))
        let ctx = try backbone.makeContext(ContextOptions(contextSize: 64 + frames, threads: threads))
        let session = try SpeakingSession(model: speech, config: config, backboneWidth: backbone.config.nEmbd, threads: threads)
        let prompt: [Int32] = (0..<32).map { Int32(16 + ($0 * 7919) % 60000) }
        print("backbone: \(backbone.config.nLayer) layers x \(backbone.config.nEmbd) (Q4_0), depthformer \(speech.vocoder.depthformer.dim) wide, detokenizer \(speech.detokenizer.model.config.nLayer) x \(speech.detokenizer.model.config.nEmbd); threads \(threads)")

        var rtfs: [Double] = [], firsts: [Double] = [], cpuPerFrame: [Double] = []
        var tBackbone = 0.0, tFrame = 0.0, tDetok = 0.0, nMeasured = 0
        var cBackbone = 0.0, cFrame = 0.0, cDetok = 0.0   // the calling thread's CPU time
        for _ in 0..<reps {
            ctx.reset()
            try ctx.eval(tokens: prompt)
            session.startTurn()
            var samples = 0
            let start = now(), cpuStart = cpuTime()
            for f in 0..<frames {
                let a = now(), ca = threadCPUTime()
                let frame = try session.generator.frame(hidden: try ctx.lastHiddenState(), sampler: &session.sampler)
                let b = now(), cb = threadCPUTime()
                let pcm = frame.isEndOfAudio ? [] : try session.waveform(frame)
                let c = now(), cc = threadCPUTime()
                if f == 0 { firsts.append(c - a) }
                samples += pcm.count
                let feedback = try session.generator.feedbackEmbedding(frame)
                try feedback.withUnsafeBufferPointer { try ctx.eval(embeddings: $0, outputHead: false) }
                let d = now(), cd = threadCPUTime()
                cFrame += cb - ca
                cDetok += cc - cb
                cBackbone += cd - cc
                tFrame += b - a
                tDetok += c - b
                tBackbone += d - c
                nMeasured += 1
            }
            samples += session.finishTurn().count
            let elapsed = now() - start
            cpuPerFrame.append((cpuTime() - cpuStart) / Double(frames))
            rtfs.append(elapsed / (Double(samples) / Double(SpeakingSession.sampleRate)))
        }
        let med = { (xs: [Double]) in xs.sorted()[xs.count / 2] }
        let n = Double(nMeasured)
        print("audio: \(frames) frames = \(fixed2(Double(frames) * 0.08)) s per run, \(reps) runs")
        print("real-time factor: \(fixed3(med(rtfs))) (time to produce the audio / its duration; goal <= 0.8)")
        print("first samples: \(fixed1(med(firsts) * 1000)) ms from the first frame's hidden state (goal <= 300 ms)")
        print("CPU time per frame: \(fixed1(med(cpuPerFrame) * 1000)) ms (all threads; with --threads 1 this is the work a frame costs, whatever the load)")
        if threads == 1 {
            print("CPU time per frame by part: depthformer + codes \(fixed1(cFrame / n * 1000)) ms, detokenizer + ISTFT \(fixed1(cDetok / n * 1000)) ms, backbone step \(fixed1(cBackbone / n * 1000)) ms")
        }
        print("per frame (80 ms of audio): depthformer + codes \(fixed1(tFrame / n * 1000)) ms, detokenizer + ISTFT \(fixed1(tDetok / n * 1000)) ms, backbone step \(fixed1(tBackbone / n * 1000)) ms")
    } catch {
        fputs("error: \(error)\n", stderr)
        exit(1)
    }
}

private func fixed1(_ x: Double) -> String { fixed(x, 1) }
private func fixed2(_ x: Double) -> String { fixed(x, 2) }
private func fixed3(_ x: Double) -> String { fixed(x, 3) }
private func fixed(_ x: Double, _ digits: Int) -> String {
    var buf = [CChar](repeating: 0, count: 64)
    _ = withVaList([x]) { vsnprintf(&buf, 64, "%.\(digits)f", $0) }
    return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
