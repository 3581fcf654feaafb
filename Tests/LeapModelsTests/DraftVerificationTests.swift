// Verification of drafted tokens: one pass over the last token and k drafts gives each position the logits
// of a one-token decode, and rewinding the rejected suffix leaves KV cache and conv state as a fresh
// evaluation of the accepted tokens would.
import LeapCore
import LeapKernels
import LeapModels
import LeapTestFiles
import Testing

/// Every architecture's tiny fixture (LFM2 in each weight type, LFM2-MoE, llama, Qwen 2 / 3).
private let fixtures = tinyModels + ["lfm2moe-tiny-q8_0", "lfm2moe-tiny-q4_k", "llama3-tiny-q8_0", "llama3-tiny-f32",
                                     "qwen2-tiny-q8_0", "qwen3-tiny-q8_0", "qwen3-tiny-q4_k"]

/// Weight types whose few-token kernels keep each token's one-token order on the default path (the
/// AVX2 / AVX-512 tables of Q4_0 and Q8_0): there verification is exact without forcing the scalar path.
private let exactOnDefaultPath: Set<String> = ["lfm2-tiny-q8_0", "lfm2-tiny-q4_0-16l", "lfm2moe-tiny-q8_0", "llama3-tiny-q8_0",
                                               "qwen2-tiny-q8_0", "qwen3-tiny-q8_0"]

private func pseudoRandomTokens(_ n: Int, vocab: Int, seed: UInt64) -> [Int32] {
    var s = seed
    return (0..<n).map { _ in
        s = s &* 6364136223846793005 &+ 1442695040888963407
        return Int32(Int(s >> 33) % vocab)
    }
}

private func sameBits(_ a: UnsafeBufferPointer<Float>, _ b: [Float]) -> Bool {
    a.count == b.count && zip(a, b).allSatisfy { $0.bitPattern == $1.bitPattern }
}

/// The reference: greedy decode one token at a time after `prefix` (token runs, and embedding rows where
/// `rowsFrom` says), the logits row after each of `steps` tokens and the tokens themselves.
private func oneByOne(_ model: LanguageModel, contextSize: Int, prefix: (InferenceContext) throws -> Void,
                      steps: Int) throws -> (tokens: [Int32], logits: [[Float]]) {
    let ctx = try model.makeContext(contextSize: contextSize)
    try prefix(ctx)
    var tokens: [Int32] = [], logits: [[Float]] = []
    for _ in 0..<steps {
        let t = argmax(try ctx.logits())
        tokens.append(t)
        try ctx.eval(tokens: [t])
        logits.append(Array(try ctx.logits()))
    }
    return (tokens, logits)
}

/// Walks the reference with verification passes of `k` drafts each: drafts that are right for the first
/// `good` positions of a pass and wrong after (good cycles through 0...k), accept the right prefix, rewind the
/// rest. Checks every kept logits row against the reference bit for bit, and at the end the captured state
/// (KV rows and conv inputs) against a context that evaluated the same tokens one at a time.
private func checkVerification(_ model: LanguageModel, contextSize: Int, k: Int, steps: Int, name: String,
                               prefix: @escaping (InferenceContext) throws -> Void) throws {
    let ref = try oneByOne(model, contextSize: contextSize, prefix: prefix, steps: steps)
    let V = model.config.nVocab
    let ctx = try model.makeContext(contextSize: contextSize)
    try prefix(ctx)
    let start = ctx.nPast
    var done = 0   // reference tokens evaluated
    var pass = 0
    while done < steps {
        let good = pass % (k + 1)
        pass += 1
        let avail = min(k, steps - done - 1)
        var drafts: [Int32] = []
        for j in 0..<avail {
            let right = ref.tokens[done + 1 + j]
            drafts.append(j < good ? right : Int32((Int(right) + 1 + j) % V))
        }
        try ctx.evalDraft(tokens: [ref.tokens[done]] + drafts)
        // Row i is the distribution after token done + i: compare while the drafts were right.
        var accepted = 0
        for i in 0...drafts.count {
            #expect(sameBits(try ctx.logits(at: i), ref.logits[done + i]), "\(name): pass \(pass), row \(i) differs from one-token decode")
            if i < drafts.count && drafts[i] == ref.tokens[done + 1 + i] { accepted += 1 } else { break }
        }
        done += 1 + accepted
        try ctx.rewind(to: start + done)
    }
    // The state after the walk equals a fresh one-token-at-a-time evaluation of the same tokens.
    let fresh = try model.makeContext(contextSize: contextSize)
    try prefix(fresh)
    for t in ref.tokens { try fresh.eval(tokens: [t]) }
    let a = try ctx.captureState(positions: ctx.nPast), b = try fresh.captureState(positions: fresh.nPast)
    #expect(a.positions == b.positions && a.inputs == b.inputs)
    #expect(a.conv.map(\.bitPattern) == b.conv.map(\.bitPattern), "\(name): conv state after rollback differs from a fresh evaluation")
    #expect(a.kv == b.kv, "\(name): KV cache after rollback differs from a fresh evaluation")
    // And it continues alike.
    let next = argmax(try fresh.logits())
    try fresh.eval(tokens: [next])
    try ctx.eval(tokens: [next])
    #expect(sameBits(try ctx.logits(), Array(try fresh.logits())))
}

private func tokenPrefix(_ model: LanguageModel, _ n: Int) -> (InferenceContext) throws -> Void {
    let prompt = pseudoRandomTokens(n, vocab: model.config.nVocab, seed: 7)
    return { try $0.eval(tokens: prompt) }
}

/// On the batch-invariant path every architecture and weight type verifies exactly.
@Test(arguments: fixtures)
func verificationGivesOneTokenLogitsAndExactRollback(name: String) throws {
    let model = try loadTiny(name)
    let ran = try batchInvariantPath.withThreadSelection {
        try checkVerification(model, contextSize: 96, k: 4, steps: 30, name: name, prefix: tokenPrefix(model, 9))
    }
    #expect(ran != nil)
}

/// On the default path the files whose few-token kernels keep the one-token order verify exactly too.
@Test(arguments: fixtures.filter { exactOnDefaultPath.contains($0) })
func verificationIsExactOnTheDefaultPath(name: String) throws {
    let model = try loadTiny(name)
    try checkVerification(model, contextSize: 96, k: 6, steps: 30, name: name, prefix: tokenPrefix(model, 9))
}

/// Embedding rows (media) in the history: the conv state and the KV rows of the rows' positions are kept.
@Test(arguments: ["lfm2-tiny-q8_0", "lfm2moe-tiny-q8_0", "qwen3-tiny-q8_0"])
func verificationAfterEmbeddingRows(name: String) throws {
    let model = try loadTiny(name)
    let ids = pseudoRandomTokens(14, vocab: model.config.nVocab, seed: 3)
    var rows: [Float] = []
    for t in ids[4..<11] { rows += try model.tokenEmbedding(t) }
    try checkVerification(model, contextSize: 96, k: 5, steps: 24, name: name) { ctx in
        try ctx.eval(tokens: Array(ids[0..<4]))
        try rows.withUnsafeBufferPointer { try ctx.eval(embeddings: $0) }
        try ctx.eval(tokens: Array(ids[11...]))
    }
}

/// The real files: SmolLM2 (llama) and Gemma 3, whose local layers see a 512-key sliding window: the prompt
/// is longer than the window, so the drafts' rows attend across its edge.
@Test(arguments: ["SmolLM2-135M-Instruct.Q4_1", "gemma-3-270m-q4_k_m"])
func verificationOnRealFiles(name: String) throws {
    let path = realModelsDir + "/" + name + ".gguf"
    try #require(fileExists(path), "\(path) is missing")
    let model = try LanguageModel.load(path: path, threads: 2)
    try checkVerification(model, contextSize: 640, k: 4, steps: 12, name: name, prefix: tokenPrefix(model, 530))
}

@Test func verificationRefusesWhatDoesNotFit() throws {
    let model = try loadTiny("lfm2-tiny-q8_0")
    let ctx = try model.makeContext(contextSize: 8)
    try ctx.eval(tokens: [1, 2, 3, 4, 5])
    #expect(throws: LeapError.self) { try ctx.evalDraft(tokens: [1, 2, 3, 4]) }     // 9 > 8 positions
    #expect(throws: LeapError.self) { try ctx.evalDraft(tokens: [1, Int32(model.config.nVocab)]) }
    #expect(throws: LeapError.self) { try ctx.evalDraft(tokens: [Int32](repeating: 1, count: 16)) }
    #expect(throws: LeapError.self) { try ctx.evalDraft(tokens: []) }
    #expect(ctx.nPast == 5)
    try ctx.evalDraft(tokens: [6, 7, 8])
    #expect(ctx.nPast == 8)
    #expect(throws: Never.self) { try ctx.logits(at: 2) }
}
