// leap-bench parallel MODEL.gguf [--conversations 4] [--threads N] [--prompt 32] [--gen 64] [--reps 3] [--compare]
//
// Conversations generating at once on one model: each conversation has its own context (a different
// prompt) and its own thread, and decodes greedily through the model's batcher, the runtime's path for a
// decoded token. Prints the aggregate tokens/s of one conversation alone and of N at once, and the latency
// per token of each conversation at once against alone. With --compare, llama.cpp's figure for the same
// workload: one context with N sequences, each step one batch of N tokens (llama_decode with n_seq_max).
//
// leap-bench parallel MODEL.gguf --drafter prompt-lookup [--conversations 4] [--threads N] [--gen 64] [--reps 3]
//
// The same through the runtime's conversations (chat turns on the copy-heavy prompts of the speculative
// suite, greedy), without speculation and with prompt lookup, interleaved run by run: 1 conversation and N
// at once each way. With speculation each conversation's token and drafts are one span of the pass the
// batcher steps them in. Prints the aggregate decode tokens/s of each and the ratios, and the batcher's
// passes (rows per pass, passes where drafts shared the pass with another conversation, spans deferred by
// the row limit).
//
// leap-bench long-context MODEL.gguf --context 16384 [--threads N] [--gen 32] [--attention-tile 4096]
//     [--embeddings RUN] [--compare [--flash-attn]]
//
// Prefill of a CONTEXT-token prompt (in 512-token passes, llama.cpp's ubatch), then decode of GEN tokens at
// that depth, and the peak RSS of the process (one context size per run, so that the peak is this size's).
// With --embeddings RUN the prompt goes in as an image prompt does: runs of RUN embedding rows (the token
// embeddings of the same prompt, through eval(embeddings:)), each after one marker token id.
import Glibc
import LeapCore
import LeapMessages
import LeapModels
import LeapRuntime
import Synchronization

private func secondsNow() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

/// CPU seconds this process has used (all threads): on a machine shared with other work, CPU time per token
/// shows what a step costs when wall-clock time mostly measures waiting for a core.
private func processCPUSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

private func fixed(_ x: Double, _ digits: Int) -> String {
    var buf = [CChar](repeating: 0, count: 64)
    _ = withVaList([x]) { vsnprintf(&buf, 64, "%.\(digits)f", $0) }
    return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// One conversation's decode loop on its own thread: `gen` greedy tokens through the batcher.
private final class DecodeJob: StartLineJob, @unchecked Sendable {
    let model: LanguageModel
    let context: InferenceContext
    let gen: Int
    let start: StartLine
    var began = 0.0, ended = 0.0
    var failure: (any Error)?
    init(_ model: LanguageModel, _ context: InferenceContext, gen: Int, start: StartLine) {
        self.model = model
        self.context = context
        self.gen = gen
        self.start = start
    }

    func run() {
        while !start.go.load(ordering: .acquiring) { sched_yield() }
        began = secondsNow()
        do {
            for _ in 0..<gen {
                let tok = greedyToken(try context.logits())
                try model.batcher.step(context, token: tok)
            }
        } catch { failure = error }
        ended = secondsNow()
        model.batcher.leave(context)
    }
}

/// The flag the decode threads wait on, so that they begin together.
private final class StartLine: Sendable {
    let go = Atomic<Bool>(false)
}

/// A job that waits at a start line on its own thread, then runs.
private protocol StartLineJob: AnyObject {
    func run()
}

private final class JobBox {
    let job: any StartLineJob
    init(_ job: any StartLineJob) { self.job = job }
}

/// Runs every job on its own thread, released together from `start`; returns the wall-clock and process
/// CPU seconds at the release, after joining every thread.
private func runFromStartLine(_ jobs: [any StartLineJob], _ start: StartLine) -> (Double, Double) {
    var handles: [pthread_t] = []
    for job in jobs {
        var t = pthread_t()
        pthread_create(&t, nil, { arg in
            guard let arg else { return nil }
            Unmanaged<JobBox>.fromOpaque(arg).takeRetainedValue().job.run()
            return nil
        }, Unmanaged.passRetained(JobBox(job)).toOpaque())
        handles.append(t)
    }
    usleep(20_000)  // every thread waiting at the start line
    let t0 = secondsNow(), cpu0 = processCPUSeconds()
    start.go.store(true, ordering: .releasing)
    for h in handles { pthread_join(h, nil) }
    return (t0, cpu0)
}

/// Runs `n` conversations at once (each prefilled first, not timed); returns (aggregate tok/s, seconds
/// per token of each conversation, process CPU seconds per generated token).
private func decodeTogether(_ model: LanguageModel, n: Int, threads: Int, prompt: Int, gen: Int) throws -> (Double, [Double], Double) {
    let start = StartLine()
    var jobs: [DecodeJob] = []
    for i in 0..<n {
        let ctx = try model.makeContext(ContextOptions(contextSize: prompt + gen + 16, threads: threads))
        try ctx.eval(tokens: tokenIDs(prompt, model.config.nVocab, seed: 12345 + UInt64(i)))
        jobs.append(DecodeJob(model, ctx, gen: gen, start: start))
    }
    let (t0, cpu0) = runFromStartLine(jobs, start)
    let wall = (jobs.map(\.ended).max() ?? t0) - t0
    let cpu = processCPUSeconds() - cpu0
    if let e = jobs.compactMap(\.failure).first { throw e }
    return (Double(n * gen) / wall, jobs.map { ($0.ended - $0.began) / Double(gen) }, cpu / Double(n * gen))
}

func benchParallel(_ args: [String]) {
    guard let path = args.first else {
        fputs("usage: leap-bench parallel MODEL.gguf [--conversations 4] [--threads N] [--prompt 32] [--gen 64] [--reps 3] [--compare]\n"
              + "       leap-bench parallel MODEL.gguf --drafter prompt-lookup [--conversations 4] [--threads N] [--gen 64] [--reps 3]\n", stderr)
        exit(2)
    }
    if let i = args.firstIndex(of: "--drafter") {
        guard i + 1 < args.count, args[i + 1] == "prompt-lookup" else {
            fputs("leap-bench parallel: --drafter takes prompt-lookup\n", stderr)
            exit(2)
        }
        return benchParallelSpeculative(path, args)
    }
    let n = max(1, intOption(args, "--conversations", 4)), threads = intOption(args, "--threads", 2)
    let prompt = intOption(args, "--prompt", 32), gen = intOption(args, "--gen", 64), reps = max(1, intOption(args, "--reps", 3))
    do {
        let model = try LanguageModel.load(path: path, threads: threads)
        var alone: [Double] = [], together: [Double] = [], latency: [[Double]] = []
        var cpuAlone = Double.infinity, cpuTogether = Double.infinity
        var stepsTogether = 0, rowsTogether = 0  // the batcher's steps of the runs at once
        for _ in 0..<reps {
            let one = try decodeTogether(model, n: 1, threads: threads, prompt: prompt, gen: gen)
            alone.append(one.0)
            cpuAlone = min(cpuAlone, one.2)
            let before = model.batcher.statistics
            let (agg, lat, cpu) = try decodeTogether(model, n: n, threads: threads, prompt: prompt, gen: gen)
            let after = model.batcher.statistics
            stepsTogether += after.steps - before.steps
            rowsTogether += after.rows - before.rows
            together.append(agg)
            latency.append(lat)
            cpuTogether = min(cpuTogether, cpu)
        }
        // Best of the repetitions (the machine is shared: the best run is the least disturbed one).
        let a = alone.max() ?? 0
        let bestRep = together.indices.max { together[$0] < together[$1] } ?? 0
        let t = together[bestRep], lat = latency[bestRep]
        let stats = model.batcher.statistics
        let cfg = model.config
        print("model: \(cfg.name) (\(cfg.architecture.rawValue)), threads \(threads), prompt \(prompt), gen \(gen) per conversation")
        print("1 conversation: \(fixed(a, 1)) tok/s (\(fixed(1000 / a, 1)) ms/token)")
        print("\(n) conversations at once: \(fixed(t, 1)) tok/s aggregate (\(fixed(t / a, 2))x one alone)")
        let worst = lat.max() ?? 0
        print("per-conversation latency at once: " + lat.map { fixed($0 * 1000, 1) }.joined(separator: ", ")
              + " ms/token (worst \(fixed(worst * a, 2))x alone)")
        print("CPU time per token: \(fixed(cpuAlone * 1000, 1)) ms alone, \(fixed(cpuTogether * 1000, 1)) ms at once (\(fixed(cpuAlone / cpuTogether, 2))x fewer)")
        print("batcher: \(stats.steps) steps, \(fixed(Double(stats.rows) / Double(max(1, stats.steps)), 2)) rows per step on average, largest \(stats.largest); "
              + "at once: \(stepsTogether) steps, \(fixed(Double(rowsTogether) / Double(max(1, stepsTogether)), 2)) rows per step")
        var load = [Double](repeating: 0, count: 3)
        _ = getloadavg(&load, 3)
        print("load average: \(fixed(load[0], 2)) \(fixed(load[1], 2)) \(fixed(load[2], 2))")
        if args.contains("--compare") {
            let ref = runLlamaCppScript("'\(path)' --threads \(threads) --prompt \(prompt) --gen \(gen) --reps \(reps) --parallel \(n)")
            guard let r1 = ref["parallel_1_tok_s"], let rn = ref["parallel_n_tok_s"] else {
                print("llama.cpp: not available (pip install llama-cpp-python)")
                return
            }
            print("llama.cpp 1 sequence: \(fixed(r1, 1)) tok/s (ratio \(fixed(a / r1, 2))x)")
            print("llama.cpp \(n) sequences in one batch: \(fixed(rn, 1)) tok/s aggregate (\(fixed(rn / r1, 2))x one; ratio \(fixed(t / rn, 2))x)")
        }
    } catch {
        fputs("error: \(error)\n", stderr)
        exit(1)
    }
}

/// One chat turn of the speculative variant on its own thread: its completion tokens and statistics.
private final class TurnJob: StartLineJob, @unchecked Sendable {
    let runner: ModelRunner
    let prompt: String
    let options: GenerationOptions
    let start: StartLine
    var stats: GenerationStats?
    var ended = 0.0
    var failure: (any Error)?
    init(_ runner: ModelRunner, _ prompt: String, _ options: GenerationOptions, start: StartLine) {
        self.runner = runner
        self.prompt = prompt
        self.options = options
        self.start = start
    }

    func run() {
        while !start.go.load(ordering: .acquiring) { sched_yield() }
        do {
            let g = try runner.createConversation().generate(ChatMessage(role: .user, text: prompt), options: options)
            while let e = try g.next() {
                if case .complete(_, _, let s) = e { stats = s }
            }
        } catch { failure = error }
        ended = secondsNow()
    }
}

/// `n` turns at once: the aggregate decode tokens/s (the tokens after each turn's first over the wall time
/// from the start to the last end, less the longest prompt's time to the first token), drafted and accepted.
private func turnsTogether(_ runner: ModelRunner, n: Int, _ options: GenerationOptions) throws -> (Double, Int, Int) {
    let start = StartLine()
    let jobs = (0..<n).map { TurnJob(runner, copyHeavyPrompts[$0 % copyHeavyPrompts.count], options, start: start) }
    let (t0, _) = runFromStartLine(jobs, start)
    if let e = jobs.compactMap(\.failure).first { throw e }
    let stats = jobs.compactMap(\.stats)
    guard stats.count == jobs.count else { throw LeapError(.internal, "a turn ended without completing") }
    let firstToken = stats.map(\.timeToFirstToken).max() ?? 0
    let wall = (jobs.map(\.ended).max() ?? t0) - t0 - firstToken
    let tokens = stats.reduce(0) { $0 + max(0, $1.completionTokens - 1) }
    return (Double(tokens) / max(wall, 1e-9), stats.reduce(0) { $0 + $1.draftedTokens },
            stats.reduce(0) { $0 + $1.acceptedDraftTokens })
}

private func benchParallelSpeculative(_ path: String, _ args: [String]) {
    let n = max(1, intOption(args, "--conversations", 4)), threads = intOption(args, "--threads", 2)
    let gen = intOption(args, "--gen", 64), reps = max(1, intOption(args, "--reps", 3))
    do {
        var ro = RunnerOptions()
        ro.threads = threads
        ro.contextSize = 2048
        let runner = try ModelRunner.load(path: path, options: ro)
        guard let batcher = runner.languageModel?.batcher else { throw LeapError(.unsupported, "\(path): not a GGUF language model") }
        var plain = GenerationOptions()
        plain.temperature = 0
        plain.repetitionPenalty = 1
        plain.maxTokens = gen
        var lookup = plain
        lookup.drafter = .ngram
        plain.drafter = DrafterChoice.none
        // Best of the repetitions, each way; the variants interleaved so that load changes hit them alike.
        var best = [String: Double]()
        var drafts = [String: (Int, Int)]()
        var passes = [String: DecodeBatcher.Statistics]()
        for _ in 0..<reps {
            for (name, count, o) in [("plain 1", 1, plain), ("lookup 1", 1, lookup), ("plain n", n, plain), ("lookup n", n, lookup)] {
                let before = batcher.statistics
                let (rate, drafted, accepted) = try turnsTogether(runner, n: count, o)
                let after = batcher.statistics
                best[name] = max(best[name] ?? 0, rate)
                drafts[name] = (drafted, accepted)
                var p = passes[name] ?? DecodeBatcher.Statistics()
                p.steps += after.steps - before.steps
                p.rows += after.rows - before.rows
                p.largest = max(p.largest, after.largest)
                p.sharedSpans += after.sharedSpans - before.sharedSpans
                p.deferred += after.deferred - before.deferred
                passes[name] = p
            }
        }
        print("model: \(runner.modelId), threads \(threads), \(gen) tokens per turn, copy-heavy prompts, greedy")
        func line(_ label: String, _ key: String, against base: String? = nil) {
            let rate = best[key] ?? 0
            var text = "\(label): \(fixed(rate, 1)) tok/s"
            if let base, let b = best[base], b > 0 { text += " (ratio \(fixed(rate / b, 2))x)" }
            if let (d, a) = drafts[key], d > 0 { text += "; \(a) of \(d) drafted tokens accepted" }
            if let p = passes[key] {
                text += "; \(fixed(Double(p.rows) / Double(max(1, p.steps)), 2)) rows per pass"
                if p.sharedSpans > 0 || p.deferred > 0 { text += ", \(p.sharedSpans) passes with drafts beside another conversation, \(p.deferred) spans deferred" }
            }
            print(text)
        }
        line("1 conversation, no speculation", "plain 1")
        line("1 conversation, prompt lookup", "lookup 1", against: "plain 1")
        line("\(n) conversations at once, no speculation", "plain n", against: "plain 1")
        line("\(n) conversations at once, prompt lookup", "lookup n", against: "plain n")
        print("\(n) at once with prompt lookup / 1 alone without: \(fixed((best["lookup n"] ?? 0) / max(best["plain 1"] ?? 0, 1e-9), 2))x")
        var load = [Double](repeating: 0, count: 3)
        _ = getloadavg(&load, 3)
        print("load average: \(fixed(load[0], 2)) \(fixed(load[1], 2)) \(fixed(load[2], 2))")
    } catch {
        fputs("error: \(error)\n", stderr)
        exit(1)
    }
}

func benchLongContext(_ args: [String]) {
    guard let path = args.first else {
        fputs("usage: leap-bench long-context MODEL.gguf --context 16384 [--threads N] [--gen 32] [--compare [--flash-attn]]\n", stderr)
        exit(2)
    }
    let nCtx = max(16, intOption(args, "--context", 4096)), threads = intOption(args, "--threads", 2)
    let gen = intOption(args, "--gen", 32)
    do {
        let model = try LanguageModel.load(path: path, threads: threads)
        var options = ContextOptions(contextSize: nCtx + gen, threads: threads)
        if let i = args.firstIndex(of: "--attention-tile"), i + 1 < args.count, let t = Int(args[i + 1]) { options.attentionTile = t }
        let ctx = try model.makeContext(options)
        let prompt = tokenIDs(nCtx, model.config.nVocab)
        let run = intOption(args, "--embeddings", 0)
        var rows: [Float] = []
        if run > 0 { for t in prompt { rows += try model.tokenEmbedding(t) } }
        let a = secondsNow(), cpu0 = processCPUSeconds()
        if run > 0 {
            // [marker token, RUN rows] until CONTEXT positions
            let E = model.config.nEmbd
            var p = 0
            while p < nCtx {
                try ctx.eval(tokens: [prompt[p]])
                p += 1
                let m = min(run, nCtx - p)
                guard m > 0 else { break }
                try rows.withUnsafeBufferPointer { try ctx.eval(embeddings: UnsafeBufferPointer(rebasing: $0[(p * E)..<((p + m) * E)])) }
                p += m
            }
        } else {
            try ctx.eval(tokens: prompt)
        }
        let ppSeconds = secondsNow() - a, ppCPU = processCPUSeconds() - cpu0
        let pp = Double(nCtx) / ppSeconds
        var tok = greedyToken(try ctx.logits())
        let b = secondsNow()
        for _ in 0..<gen {
            try ctx.eval(tokens: [tok])
            tok = greedyToken(try ctx.logits())
        }
        let tg = Double(gen) / (secondsNow() - b)
        let rss = peakRSSMB()
        var load = [Double](repeating: 0, count: 3)
        _ = getloadavg(&load, 3)
        print("model: \(model.config.name), context \(nCtx), threads \(threads)")
        let how = run > 0 ? "runs of \(run) embedding rows after a token" : "512 per pass"
        print("prefill (\(nCtx) positions, \(how)): \(fixed(pp, 1)) tok/s, \(fixed(ppCPU, 2)) CPU s (\(fixed(ppSeconds, 2)) s)")
        print("decode at depth \(nCtx) (\(gen) tokens): \(fixed(tg, 1)) tok/s")
        print("peak RSS: \(fixed(rss, 1)) MB (KV cache and conv state \(fixed(Double(ctx.stateBytes) / 1e6, 1)) MB)")
        print("load average: \(fixed(load[0], 2)) \(fixed(load[1], 2)) \(fixed(load[2], 2))")
        if args.contains("--compare") {
            let fa = args.contains("--flash-attn")
            let ref = runLlamaCppScript("'\(path)' --threads \(threads) --prompt \(nCtx) --gen \(gen) --reps 1 --ubatch 512 --decode-after-prompt" + (fa ? " --flash-attn" : ""))
            guard let rpp = ref["pp_tok_s"], let rtg = ref["tg_tok_s"], let rrss = ref["peak_rss_mb"] else {
                print("llama.cpp: not available (pip install llama-cpp-python)")
                return
            }
            print("llama.cpp (flash attention \(fa ? "on" : "off")) prefill: \(fixed(rpp, 1)) tok/s (ratio \(fixed(pp / rpp, 2))x)")
            print("llama.cpp decode at depth \(nCtx): \(fixed(rtg, 1)) tok/s (ratio \(fixed(tg / rtg, 2))x)")
            print("llama.cpp peak RSS (python process): \(fixed(rrss, 1)) MB (ratio \(fixed(rss / rrss, 2))x)")
        }
    } catch {
        fputs("error: \(error)\n", stderr)
        exit(1)
    }
}
