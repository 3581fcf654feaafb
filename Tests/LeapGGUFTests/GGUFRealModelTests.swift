import Glibc
import LeapCore
import LeapGGUF
import LeapTestFiles
import Testing

let smolLM2 = modelPath("SmolLM2-135M-Instruct.Q4_1.gguf")
let gemma3 = modelPath("gemma-3-270m-q4_k_m.gguf")

/// Every tensor of the real models dequantizes like gguf-py: the golden files (make_gguf_fixtures.py) hold,
/// per tensor, sums over all values and the first 64 values of the first and last rows.
@Suite struct GGUFRealModelTests {
    func check(_ path: String, golden: String) throws {
        let file = try GGUFFile(path: path)
        let text = try #require(readBytes(ggufFixtures + "/" + golden).flatMap { String(validating: $0, as: UTF8.self) })
        var checked = Set<String>()
        var current: GGUFTensorInfo? = nil
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let f = line.split(separator: " ")
            if f[0] == "tensor" {
                let name = String(f[1])
                let t = try #require(file.tensor(named: name), "tensor \(name) missing")
                current = t
                checked.insert(name)
                #expect(t.type.name == f[2], "\(name) type")
                #expect(t.rowCount == Int(f[3]) && t.rowLength == Int(f[4]), "\(name) shape")
                let sum = try #require(Double(f[5])), sumAbs = try #require(Double(f[6])), sumSq = try #require(Double(f[7]))
                // Whole tensor, a chunk of rows at a time (token_embd has 262144 rows).
                var s = 0.0, sa = 0.0, sq = 0.0
                let chunk = max(1, (1 << 20) / max(1, t.rowLength))
                var buffer = [Float](repeating: 0, count: chunk * t.rowLength)
                var r = 0
                while r < t.rowCount {
                    let n = min(chunk, t.rowCount - r)
                    try buffer.withUnsafeMutableBufferPointer { try file.dequantizeRows(t, r..<r + n, into: $0.baseAddress!) }
                    for v in buffer[0..<n * t.rowLength] {
                        let d = Double(v)
                        s += d
                        sa += abs(d)
                        sq += d * d
                    }
                    r += n
                }
                // The goldens are float64 sums of the same float32 values printed with 9 digits (5e-9
                // relative); summing in another order in double adds ~1e-13: 1e-6 of Σ|x| is slack for both,
                // while one wrong block (a scale or offset misread) moves the sums by far more.
                #expect(abs(s - sum) <= 1e-6 * max(sumAbs, 1e-30), "\(name): sum \(s) vs \(sum)")
                #expect(abs(sa - sumAbs) <= 1e-6 * sumAbs, "\(name): sum|x| \(sa) vs \(sumAbs)")
                #expect(abs(sq - sumSq) <= 1e-6 * sumSq, "\(name): sum x² \(sq) vs \(sumSq)")
            } else if f[0] == "row", let t = current {
                let r = try #require(Int(f[1]))
                let want = f[2...].compactMap { Float(String($0)) }
                let got = try file.dequantizeRow(t, r).prefix(want.count)
                #expect(zip(got, want).allSatisfy { $0.bitPattern == $1.bitPattern }, "\(t.name) row \(r)")
            }
        }
        #expect(checked == Set(file.tensors.map(\.name)), "every tensor has a golden")
    }

    @Test(.enabled(if: smolLM2 != nil, "SmolLM2-135M-Instruct.Q4_1.gguf not found in $LEAP_MODELS_DIR or <repo>/models"))
    func smolLM2MatchesGGUFPy() throws {
        let path = try #require(smolLM2)
        try check(path, golden: "smollm2-135m-q4_1.golden.txt")
        let f = try GGUFFile(path: path)
        #expect(try f.string("general.architecture") == "llama")
        #expect(try f.uint32("llama.block_count") == 30)
        #expect(try f.stringArray("tokenizer.ggml.tokens").count == 49152)
    }

    @Test(.enabled(if: gemma3 != nil, "gemma-3-270m-q4_k_m.gguf not found in $LEAP_MODELS_DIR or <repo>/models"))
    func gemma3MatchesGGUFPy() throws {
        let path = try #require(gemma3)
        try check(path, golden: "gemma-3-270m-q4_k_m.golden.txt")
        let f = try GGUFFile(path: path)
        #expect(try f.string("general.architecture") == "gemma3")
        #expect(try f.stringArray("tokenizer.ggml.tokens").count == 262144)
        #expect(try f.floatArray("tokenizer.ggml.scores").count == 262144)
        #expect(try f.int32Array("tokenizer.ggml.token_type").count == 262144)
    }
}

/// llama.cpp's vocabulary-only GGUFs (scripts/fetch-vocabs.sh), written by many converter versions
/// (GGUF v2 and v3, no tensors): every one opens, and the per-token arrays agree in length.
let vocabsDir: String? = {
    var candidates: [String] = []
    if let d = getenv("LEAP_VOCABS_DIR") { candidates.append(String(cString: d)) }
    if let d = getenv("LEAP_MODELS_DIR") { candidates.append(String(cString: d) + "/vocabs") }
    candidates.append(repoDir + "/models/vocabs")
    return candidates.first { access($0 + "/ggml-vocab-gpt-2.gguf", R_OK) == 0 }
}()

@Test(.enabled(if: vocabsDir != nil, "llama.cpp vocabularies not found (scripts/fetch-vocabs.sh)"))
func llamaCppVocabulariesOpen() throws {
    let dir = try #require(vocabsDir)
    let names = ["aquila", "baichuan", "bert-bge", "command-r", "deepseek-coder", "deepseek-llm", "falcon", "gpt-2",
                 "gpt-neox", "llama-bpe", "llama-spm", "mpt", "phi-3", "qwen2", "refact", "starcoder"]
    var opened = 0
    for name in names {
        let path = dir + "/ggml-vocab-\(name).gguf"
        guard access(path, R_OK) == 0 else { continue }
        let f = try GGUFFile(path: path)
        let tokens = try f.stringArray("tokenizer.ggml.tokens")
        #expect(tokens.count > 1000, "\(name)")
        if let types = try f.optionalInt32Array("tokenizer.ggml.token_type") { #expect(types.count == tokens.count, "\(name)") }
        if let scores = try f.optionalFloatArray("tokenizer.ggml.scores") { #expect(scores.count == tokens.count, "\(name)") }
        #expect(try !f.string("tokenizer.ggml.model").isEmpty)
        opened += 1
    }
    #expect(opened >= 10)
}
