// leap-bench prompt-cache MODEL.gguf [--threads 2] [--reps 5] [--system-tokens 2000]
//
// Time to first token of a chat whose long system prompt (about --system-tokens positions) was cached on
// disk by an earlier process, beside the same chat without a cache, on the same runner options. The earlier
// process is this program run as `leap-bench prompt-cache-write` (a child): it answers one question with
// the cache on (a miss: it evaluates the prompt and writes the system prompt's snapshot) and reports the
// snapshot's size. The measuring process then alternates uncached and cached turns (fresh conversations,
// the memory cache off so that every cached turn reads the file) and prints the best of each.
// An LFM2-350M-shaped file: $LEAP_LLAMA_PYTHON scripts/bench_vision_ttft.py make DIR.
import Glibc
import LeapCore
import LeapMessages
import LeapModels
import LeapPromptCache
import LeapRuntime

private func systemPrompt(_ runner: ModelRunner, tokens wanted: Int) throws -> String {
    let sentences = ["You are the on-device assistant of a field maintenance app.",
                     "Answer with the exact procedure from the manual, cite the section number, and never guess a torque value.",
                     "When the user mentions a part number, repeat it back before giving instructions.",
                     "Safety warnings come first; electrical work requires the lockout steps of section 2.4."]
    var text = ""
    var i = 0
    while try runner.promptTokenCount(messages: [ChatMessage(role: .system, text: text)]) < wanted {
        text += sentences[i % sentences.count] + " Rule \(i + 1) of the manual applies here. "
        i += 1
    }
    return text
}

private func options(threads: Int?, cacheRoot: String?) -> RunnerOptions {
    var o = RunnerOptions()
    o.threads = threads
    o.contextSize = 4096
    o.autoDetectCompanionFiles = false
    if let cacheRoot {
        o.cache = PromptCacheOptions(path: cacheRoot, enabled: true)
        o.cache.maxEntriesMemory = 0
    }
    return o
}

/// Seconds from the request to the first token, and the turn's stats.
private func firstToken(_ runner: ModelRunner, system: String) throws -> (Double, GenerationStats) {
    var g = GenerationOptions()
    g.temperature = 0
    g.maxTokens = 1
    let conv = runner.createConversation(systemPrompt: system)
    let t0 = monotonicSeconds()
    let gen = try conv.generate(ChatMessage(role: .user, text: "How do I replace the pump seal?"), options: g)
    while let e = try gen.next() {
        if case .complete(_, _, let s) = e { return (monotonicSeconds() - t0, s) }
    }
    throw LeapError(.internal, "the turn did not complete")
}

/// This program's path (the shell that runs the child would read its own /proc/self/exe).
private func executablePath() -> String {
    var buf = [CChar](repeating: 0, count: 4096)
    let n = readlink("/proc/self/exe", &buf, buf.count - 1)
    return n > 0 ? String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
}

/// (name, bytes) of the snapshot files in `folder`.
private func snapshotFiles(_ folder: String) -> [(String, Int)] {
    guard let dir = opendir(folder) else { return [] }
    defer { closedir(dir) }
    var out: [(String, Int)] = []
    while let e = readdir(dir) {
        let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        var st = stat()
        if name.hasSuffix(".snap"), stat(folder + "/" + name, &st) == 0 { out.append((name, Int(st.st_size))) }
    }
    return out
}

private func loadAverage() -> String {
    guard let f = fopen("/proc/loadavg", "r") else { return "?" }
    defer { fclose(f) }
    var line = [CChar](repeating: 0, count: 128)
    guard fgets(&line, 128, f) != nil else { return "?" }
    return String(decoding: line.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

private func parse(_ args: [String]) -> (model: String?, threads: Int?, reps: Int, tokens: Int, rest: [String]) {
    var model: String?, threads: Int?, reps = 5, tokens = 2000
    var rest: [String] = []
    var i = 0
    while i < args.count {
        let a = args[i]
        let v = i + 1 < args.count ? args[i + 1] : ""
        switch a {
        case "--threads": threads = Int(v); i += 1
        case "--reps": reps = Int(v) ?? reps; i += 1
        case "--system-tokens": tokens = Int(v) ?? tokens; i += 1
        default: if model == nil { model = a } else { rest.append(a) }
        }
        i += 1
    }
    return (model, threads, reps, tokens, rest)
}

/// The earlier process: leap-bench prompt-cache-write MODEL ROOT [--threads N] [--system-tokens T].
func benchPromptCacheWrite(_ args: [String]) {
    let a = parse(args)
    guard let model = a.model, let root = a.rest.first else { fputs("usage: leap-bench prompt-cache-write MODEL ROOT\n", stderr); exit(2) }
    do {
        let runner = try ModelRunner.load(path: model, options: options(threads: a.threads, cacheRoot: root))
        let system = try systemPrompt(runner, tokens: a.tokens)
        _ = try firstToken(runner, system: "Warm-up.")   // page in the weights
        runner.promptCache?.flush()
        let before = runner.promptCache?.counters ?? PromptCacheCounters()
        let (t, stats) = try firstToken(runner, system: system)
        runner.promptCache?.flush()
        let c = runner.promptCache?.counters ?? PromptCacheCounters()
        print("first_run_ttft_s: \(t)")
        print("first_run_prompt_tokens: \(stats.promptTokens)")
        print("snapshot_writes: \(c.writes - before.writes)")
        print("snapshot_bytes: \(c.bytesWritten - before.bytesWritten)")
    } catch {
        fputs("prompt-cache-write: \(error)\n", stderr)
        exit(1)
    }
}

func benchPromptCache(_ args: [String]) {
    let a = parse(args)
    guard let model = a.model else {
        fputs("usage: leap-bench prompt-cache MODEL.gguf [--threads N] [--reps R] [--system-tokens T]\n", stderr)
        exit(2)
    }
    var template = Array("/tmp/leap-bench-prompt-cache-XXXXXX".utf8CString)
    let root = template.withUnsafeMutableBufferPointer { buf -> String in
        guard let base = buf.baseAddress, mkdtemp(base) != nil else { return "/tmp/leap-bench-prompt-cache" }
        return String(cString: base)
    }
    let threadArg = a.threads.map { " --threads \($0)" } ?? ""
    let child = keyValues("'\(executablePath())' prompt-cache-write '\(model)' '\(root)'\(threadArg) --system-tokens \(a.tokens)")
    guard let bytes = child["snapshot_bytes"], (child["snapshot_writes"] ?? 0) >= 1 else {
        fputs("prompt-cache: the writing process did not write a snapshot\n", stderr)
        exit(1)
    }
    do {
        let plain = try ModelRunner.load(path: model, options: options(threads: a.threads, cacheRoot: nil))
        let cached = try ModelRunner.load(path: model, options: options(threads: a.threads, cacheRoot: root))
        let system = try systemPrompt(plain, tokens: a.tokens)
        var bestPlain = Double.infinity, bestCached = Double.infinity
        var plainStats: GenerationStats?, cachedStats: GenerationStats?
        _ = try firstToken(plain, system: "Warm-up.")   // page in the weights
        for _ in 0..<a.reps {
            let (tp, sp) = try firstToken(plain, system: system)
            let (tc, sc) = try firstToken(cached, system: system)
            if tp < bestPlain { bestPlain = tp; plainStats = sp }
            if tc < bestCached { bestCached = tc; cachedStats = sc }
        }
        // The restore alone: read the file, check and decode it, copy it into a fresh context.
        var restoreBest = Double.infinity, captureBest = Double.infinity
        if let cache = cached.promptCache, let folder = cache.folder, let lm = cached.languageModel {
            let ctx = try lm.makeContext(ContextOptions(contextSize: 4096, threads: a.threads))
            let largest = snapshotFiles(folder).max { $0.1 < $1.1 }
            if let (name, _) = largest {
                for _ in 0..<a.reps {
                    let t0 = monotonicSeconds()
                    guard let bytes = readFile(folder + "/" + name) else { break }
                    let snapshot = try SnapshotFormat.decode(bytes, identity: cache.identity, shape: ctx.stateShape)
                    try ctx.restoreState(snapshot.state)
                    restoreBest = min(restoreBest, monotonicSeconds() - t0)
                    let t1 = monotonicSeconds()
                    _ = try ctx.captureState(positions: ctx.nPast)
                    captureBest = min(captureBest, monotonicSeconds() - t1)
                }
            }
        }
        let positions = (plainStats?.promptTokens ?? 0)
        let restored = cachedStats?.cachedPromptTokens ?? 0
        print("prompt-cache: \(model), threads \(a.threads.map(String.init) ?? "default"), best of \(a.reps), load average \(loadAverage())")
        print("prompt_positions: \(positions) (system prompt + question)")
        print("ttft_uncached_ms: \(bestPlain * 1000)")
        print("ttft_cached_from_disk_ms: \(bestCached * 1000) (\(restored) positions restored from the earlier process's snapshot)")
        print("speedup: \(bestPlain / bestCached)x")
        print("first_run_with_cache_ms: \((child["first_run_ttft_s"] ?? 0) * 1000) (the earlier process: a miss that writes the snapshot)")
        print("restore_ms: \(restoreBest * 1000) (read + check + decode + copy into a context, of the cached turn's first token time)")
        print("capture_ms: \(captureBest * 1000) (the copy a miss makes after evaluating the prefix; the file is written in the background)")
        print("snapshot_bytes: \(Int(bytes)) (\(restored > 0 ? Int(bytes) / restored : 0) bytes per position)")
        print("disk_hits: \(cached.promptCache?.counters.diskHits ?? 0), ignored: \(cached.promptCache?.counters.ignored ?? 0)")
    } catch {
        fputs("prompt-cache: \(error)\n", stderr)
        exit(1)
    }
}
