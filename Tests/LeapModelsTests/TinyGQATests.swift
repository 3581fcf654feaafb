import LeapTestFiles
import Testing
import LeapGGUF
import LeapModels
import LeapTokenizer

/// Tiny random-weight Llama 3 (rope_freqs), Qwen2 (Q/K/V biases) and Qwen3 (Q/K norms) files from
/// scripts/fixtures/make_tiny_gqa.py, against llama.cpp goldens (make_model_goldens.py --gqa-only).
let tinyGQAModels: [(String, Architecture)] = [
    ("llama3-tiny-f32", .llama), ("llama3-tiny-q8_0", .llama),
    ("qwen2-tiny-f16", .qwen2), ("qwen2-tiny-q8_0", .qwen2),
    ("qwen3-tiny-f32", .qwen3), ("qwen3-tiny-q8_0", .qwen3), ("qwen3-tiny-q4_k", .qwen3),
    ("qwen3-tiny-yarn-f16", .qwen3),
]

/// Teacher-forced over the golden tokens: the largest |ours - llama.cpp| over the five logits llama.cpp ranked
/// highest at every position, the largest |logit| among them (the scale the difference is judged against),
/// and the largest argmax gap (our top logit minus our logit of llama.cpp's top token: 0 when the argmaxes
/// agree everywhere, small when they differ only on near-ties).
private func teacherForcedDiffs(_ model: LanguageModel, _ g: LlamaCppGolden) throws -> (diff: Float, scale: Float, argmaxGap: Float) {
    let ctx = try model.makeContext(contextSize: 256)
    try ctx.eval(tokens: g.tokens, wantAllLogits: true)
    var d: Float = 0, scale: Float = 0, gap: Float = 0
    for (p, gp) in g.positions.enumerated() {
        let row = try ctx.logits(at: p)
        for (id, logit) in gp.top {
            d = max(d, abs(row[Int(id)] - logit))
            scale = max(scale, abs(logit))
        }
        gap = max(gap, row[Int(argmax(row))] - row[Int(gp.argmax)])
    }
    return (d, scale, gap)
}

/// Greedy decoding teacher-forced on llama.cpp's continuation of each golden prompt. Returns, per prompt,
/// the leading run of identical tokens and the largest gap (our top logit minus our logit of llama.cpp's
/// token) over the first `count` steps: 0 when every step agrees, small when a step was a near-tie.
private func greedyAgreement(_ model: LanguageModel, _ g: LlamaCppGolden, count: Int) throws -> [(prefix: Int, gap: Float)] {
    let ctx = try model.makeContext(contextSize: 256)
    var result: [(Int, Float)] = []
    for (prompt, want) in g.generations {
        try ctx.rewind(to: 0)
        try ctx.eval(tokens: prompt)
        var prefix = 0, diverged = false
        var gap: Float = 0
        for k in 0..<min(count, want.count) {
            let row = try ctx.logits()
            let top = argmax(row)
            if top == want[k] && !diverged { prefix += 1 } else { diverged = true }
            gap = max(gap, row[Int(top)] - row[Int(want[k])])
            try ctx.eval(tokens: [want[k]])
        }
        result.append((prefix, gap))
    }
    return result
}

@Test(arguments: tinyGQAModels)
func tinyGQAMatchesLlamaCpp(name: String, arch: Architecture) throws {
    let g = try #require(LlamaCppGolden(path: goldensDir + "/\(name).llamacpp.txt"))
    let model = try loadTiny(name)
    #expect(model.config.architecture == arch)
    #expect(model.config.nVocab == g.nVocab)
    #expect(model.config.ropeNeox == (arch != .llama))
    let s = try compareTeacherForced(model, g)
    let tf = try teacherForcedDiffs(model, g)
    let greedy = try greedyAgreement(model, g, count: 32)
    print("\(name): argmax agreement \(s.agreement) (max near-tie gap \(tf.argmaxGap)), ppl \(s.perplexity) vs llama.cpp \(g.perplexity), max top-5 logit diff \(tf.diff) (largest logit \(tf.scale)), greedy prefix \(greedy.map(\.prefix)) (max near-tie gap \(greedy.map(\.gap).max() ?? 0))")
    // Float weights differ from llama.cpp only by the F16 KV cache rounding and summation order: every argmax
    // and greedy step agrees. Quantized files also differ by 8-bit activation blocks (rounded differently by
    // each kernel ISA), and their random untied outputs give flat distributions over 512 tokens whose top two
    // logits are often within 0.05: there a mismatching argmax or greedy step must be such a near-tie
    // (llama3-tiny-q8_0: llama.cpp's margins at the two flipped greedy steps are 0.010 and 0.014).
    let quantized = !(name.hasSuffix("f32") || name.hasSuffix("f16"))
    #expect(s.agreement >= (quantized ? 0.95 : 1.0))
    #expect(tf.argmaxGap < (quantized ? 0.1 : 1e-6))
    #expect(abs(s.perplexity / g.perplexity - 1) < 0.01)
    #expect(tf.diff < (quantized ? 0.2 : 0.01))
    #expect(greedy.allSatisfy { $0.gap < (quantized ? 0.1 : 1e-6) })
    #expect(greedy.filter { $0.prefix >= 32 }.count >= (quantized ? 2 : g.generations.count))
    // Where llama.cpp's own orders differ on the file (goldens/llamacpp_self_agreement.txt; llama3-tiny-q8_0's
    // do not), every miss must sit at a margin llama.cpp's own noise reaches (LlamaCppGoldenTests).
    if quantized, let selfAgreement = LlamaCppSelfAgreement(model: name) { expectMissesAreNearTies(s, selfAgreement) }
}

@Test(arguments: tinyGQAModels)
func tinyGQABatchPrefillEqualsDecode(name: String, arch: Architecture) throws {
    let g = try #require(LlamaCppGolden(path: goldensDir + "/\(name).llamacpp.txt"))
    let tokens = Array(g.tokens.prefix(48))
    let model = try loadTiny(name)
    let maxDiff = try #require(try batchInvariantPath.withThreadSelection { try maxBatchVsIncrementalDiff(model, tokens) })
    // The batch-invariant path sums every row in one order whatever the batch: the logits are equal bit for bit.
    #expect(maxDiff == 0, "max |batch - incremental| = \(maxDiff)")
}

@Test func tinyGQAConfigFromMetadata() throws {
    let llama = try loadTiny("llama3-tiny-f32").config
    #expect(llama.ropeBase == 500_000 && llama.headDim == 16 && llama.nRot == 16 && llama.ropeFreqScale == 1)
    // Qwen3: head dim from attention.key_length, so n_head × head_dim (4 × 32) != n_embd (64).
    let qwen3 = try loadTiny("qwen3-tiny-f32").config
    #expect(qwen3.headDim == 32 && qwen3.nHead * qwen3.headDim == 128 && qwen3.nEmbd == 64)
    #expect(qwen3.rmsEps == 1e-6 && qwen3.nHeadKV == [2, 2, 2] && qwen3.ropeYaRN == nil)
    let yarn = try loadTiny("qwen3-tiny-yarn-f16").config
    #expect(yarn.ropeFreqScale == 0.25 && yarn.ropeYaRN != nil)
}

@Test func unknownRopeScalingTypeIsUnsupported() throws {
    let original = try #require(readBytes(modelFixturesDir + "/qwen3-tiny-yarn-f16.gguf"))
    // The first "yarn" is in general.name ("qwen3-tiny-yarn-f16"), the second is rope.scaling.type's value.
    let nameRenamed = try #require(renaming("yarn", to: "yarx", in: original))
    let bytes = try #require(renaming("yarn", to: "yarx", in: nameRenamed))
    do {
        _ = try LanguageModel.load(file: try GGUFFile(bytes: bytes))
        Issue.record("loaded with rope.scaling.type yarx")
    } catch {
        #expect("\(error)".contains("qwen3.rope.scaling.type 'yarx'"), "\(error)")
    }
}

/// RoPE scaling changes the logits: without Llama 3's `rope_freqs.weight`, or with the YaRN file's
/// scaling type hidden (so that its factor 4 becomes llama.cpp's default linear scaling), the model no
/// longer matches llama.cpp (guards against the scaling being read but not applied).
@Test(arguments: [
    ("llama3-tiny-f32", "rope_freqs.weight", "rope_frexs.weight"),
    ("qwen3-tiny-yarn-f16", "qwen3.rope.scaling.type", "qwen3.rope.scaling.tyqe"),
])
func ropeScalingMattersAgainstLlamaCpp(name: String, key: String, renamed: String) throws {
    let g = try #require(LlamaCppGolden(path: goldensDir + "/\(name).llamacpp.txt"))
    let original = try #require(readBytes(modelFixturesDir + "/\(name).gguf"))
    let bytes = try #require(renaming(key, to: renamed, in: original))
    let model = try LanguageModel.load(file: try GGUFFile(bytes: bytes), threads: 2)
    let tf = try teacherForcedDiffs(model, g)
    print("\(name) without \(key): max top-5 logit diff \(tf.diff)")
    #expect(tf.diff > 0.5)
}

@Test(arguments: [
    ("qwen2-tiny-f16", "blk.1.attn_k.bias", "blk.1.attn_k.bixs"),
    ("qwen3-tiny-f32", "blk.2.attn_q_norm.weight", "blk.2.attn_q_norx.weight"),
    ("llama3-tiny-q8_0", "blk.0.ffn_up.weight", "blk.0.ffn_ux.weight"),
])
func tinyGQAMissingTensorIsNamed(name: String, tensor: String, renamed: String) throws {
    let error = try loadError(name, renaming: tensor, to: renamed)
    #expect(error?.contains(tensor) == true, "\(error ?? "\(name) loaded without \(tensor)")")
}

/// The whole text path of these files: our tokenizer (pre-tokenizer llama-bpe with BOS for llama, qwen2
/// without BOS) reproduces the ids llama.cpp fed the model for the goldens.
@Test(arguments: tinyGQAModels)
func tinyGQATokenizesLikeLlamaCpp(name: String, arch: Architecture) throws {
    let g = try #require(LlamaCppGolden(path: goldensDir + "/\(name).llamacpp.txt"))
    let file = try GGUFFile(path: modelFixturesDir + "/\(name).gguf")
    let tokenizer = try Tokenizer(vocabulary: TokenizerVocabulary(gguf: file))
    let text = try #require(readText(repoDir + "/scripts/fixtures/golden_text.txt"))
    let ids = tokenizer.tokenize(text, addSpecial: true, parseSpecial: false)
    #expect(Array(ids.prefix(g.tokens.count)) == g.tokens)
    #expect((ids.first == 1) == (arch == .llama))
    // The greedy prompts of make_model_goldens.py (PROMPTS), in order.
    let prompts = ["The capital of France is", "Once upon a time, there was a little robot who",
                   "def fibonacci(n):\n", "Water boils at a temperature of"]
    #expect(g.generations.map(\.prompt) == prompts.map { tokenizer.tokenize($0, addSpecial: true, parseSpecial: false) })
}
