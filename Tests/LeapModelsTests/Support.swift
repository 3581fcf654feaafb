import Glibc
import LeapTestFiles
import Testing
import LeapGGUF
import LeapKernels
import LeapModels

/// Tests/Fixtures/models
let modelFixturesDir = fixturesDir("models")

let goldensDir = modelFixturesDir + "/goldens"


func fileExists(_ path: String) -> Bool { access(path, R_OK) == 0 }



/// One position of a llama.cpp golden.
struct GoldenPosition {
    var argmax: Int32
    var logprobNext: Double
    var top: [(Int32, Float)]
}

struct LlamaCppGolden {
    var nVocab = 0
    var tokens: [Int32] = []
    var positions: [GoldenPosition] = []
    var perplexity = 0.0
    var generations: [(prompt: [Int32], generated: [Int32])] = []

    init?(path: String) {
        guard let text = readText(path) else { return nil }
        for line in text.split(separator: "\n") {
            let f = line.split(separator: " ").map(String.init)
            guard let key = f.first else { continue }
            switch key {
            case "n_vocab": nVocab = Int(f[1]) ?? 0
            case "tokens": tokens = f.dropFirst().compactMap { Int32($0) }
            case "pos":
                let top = f[4...].map { s -> (Int32, Float) in
                    let kv = s.split(separator: ":")
                    return (Int32(kv[0]) ?? -1, Float(kv[1]) ?? .nan)
                }
                positions.append(GoldenPosition(argmax: Int32(f[2]) ?? -1, logprobNext: Double(f[3]) ?? .nan, top: top))
            case "ppl": perplexity = Double(f[1]) ?? 0
            case "gen":
                let np = Int(f[1]) ?? 0
                let prompt = f[2..<(2 + np)].compactMap { Int32($0) }
                let gen = f[(3 + np)...].compactMap { Int32($0) }
                generations.append((prompt, gen))
            default: break
            }
        }
    }
}

/// Log-softmax value of `id` in a logits row.
func logProb(_ row: UnsafeBufferPointer<Float>, _ id: Int) -> Double {
    var m = -Double.infinity
    for v in row { m = max(m, Double(v)) }
    var s = 0.0
    for v in row { s += exp(Double(v) - m) }
    return Double(row[id]) - m - log(s)
}

func argmax(_ row: UnsafeBufferPointer<Float>) -> Int32 {
    var best = 0
    for i in 1..<row.count where row[i] > row[best] { best = i }
    return Int32(best)
}

let tinyModels = ["lfm2-tiny-f32", "lfm2-tiny-f16-attn", "lfm2-tiny-bf16", "lfm2-tiny-q8_0", "lfm2-tiny-q4_0-16l", "lfm2-tiny-q4_k"]

func loadTiny(_ name: String, threads: Int = 2) throws -> LanguageModel {
    try LanguageModel.load(path: modelFixturesDir + "/" + name + ".gguf", threads: threads)
}

/// `bytes` with the first occurrence of `name` overwritten by `replacement` (same length): renames a
/// tensor or key inside a GGUF image so that loading sees it as missing.
func renaming(_ name: String, to replacement: String, in bytes: [UInt8]) -> [UInt8]? {
    let needle = Array(name.utf8), repl = Array(replacement.utf8)
    guard needle.count == repl.count, bytes.count >= needle.count else { return nil }
    outer: for i in 0...(bytes.count - needle.count) where bytes[i] == needle[0] {
        for j in 0..<needle.count where bytes[i + j] != needle[j] { continue outer }
        var out = bytes
        out.replaceSubrange(i..<(i + needle.count), with: repl)
        return out
    }
    return nil
}

/// A float64 numpy golden of make_tiny_lfm2.py / make_tiny_lfm2moe.py: token ids and full logits [T, V].
func numpyGolden(_ name: String) throws -> (tokens: [Int32], logits: [Float], nVocab: Int) {
    let meta = try #require(readText(goldensDir + "/\(name).numpy.txt"))
    var tokens: [Int32] = []
    var nVocab = 0
    for line in meta.split(separator: "\n") {
        let f = line.split(separator: " ")
        if f.first == "tokens" { tokens = f.dropFirst().compactMap { Int32($0) } }
        if f.first == "n_vocab" { nVocab = Int(f[1]) ?? 0 }
    }
    let logits = try #require(readFloats(goldensDir + "/\(name).numpy.f32"))
    return (tokens, logits, nVocab)
}

/// The kernel path on which batched prefill must equal token-by-token decode: the scalar one. The AVX2 /
/// AVX-512 paths follow llama.cpp, whose results depend on the batch: its one-token attention sums in
/// ggml_vec_dot_f16's order, its batches in tinyBLAS's (decodeFollowsLlamaCppOneTokenAttention), and Q4_K /
/// Q6_K weights go through batch-dependent orders (LeapKernelsTests/KQuantBatchOrderTests.swift).
let batchInvariantPath = KernelISA.scalar

/// Largest |logit| difference between evaluating `tokens` as one batch and one token at a time.
func maxBatchVsIncrementalDiff(_ model: LanguageModel, _ tokens: [Int32]) throws -> Float {
    let batch = try model.makeContext(contextSize: 64)
    try batch.eval(tokens: tokens, wantAllLogits: true)
    let step = try model.makeContext(contextSize: 64)
    var maxDiff: Float = 0
    for (p, t) in tokens.enumerated() {
        try step.eval(tokens: [t])
        let a = try batch.logits(at: p), b = try step.logits()
        for i in 0..<a.count { maxDiff = max(maxDiff, abs(a[i] - b[i])) }
    }
    return maxDiff
}

/// The load error of fixture `file` with `name` renamed to `renamed` (a missing tensor or key), or nil when
/// it still loads.
func loadError(_ file: String, renaming name: String, to renamed: String) throws -> String? {
    let original = try #require(readBytes(modelFixturesDir + "/\(file).gguf"))
    let bytes = try #require(renaming(name, to: renamed, in: original))
    do {
        _ = try LanguageModel.load(file: try GGUFFile(bytes: bytes))
        return nil
    } catch {
        return "\(error)"
    }
}

/// Largest |ours - llama.cpp| over the golden's top-5 logits of every teacher-forced position, and the
/// largest |logit| among them (the scale).
func maxTop5LogitDiff(_ model: LanguageModel, _ g: LlamaCppGolden) throws -> (diff: Float, scale: Float) {
    let ctx = try model.makeContext(contextSize: 256)
    try ctx.eval(tokens: g.tokens, wantAllLogits: true)
    var worst: Float = 0, scale: Float = 0
    for (p, gp) in g.positions.enumerated() {
        let row = try ctx.logits(at: p)
        for (id, logit) in gp.top {
            worst = max(worst, abs(row[Int(id)] - logit))
            scale = max(scale, abs(logit))
        }
    }
    return (worst, scale)
}
