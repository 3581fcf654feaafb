// Stepped decode: several sequences' next tokens in one forward pass give what each gives alone.
import LeapCore
import LeapKernels
import LeapModels
import Testing

/// Greedy decode of each prompt for its own number of steps, alone (eval one token at a time) or all
/// together (`decodeStep` over the sequences still running): the logits row of every step of every sequence.
private func greedyLogits(_ model: LanguageModel, prompts: [[Int32]], steps: [Int], batched: Bool) throws -> [[[Float]]] {
    let contexts = try prompts.map { _ in try model.makeContext(contextSize: 64) }
    var rows = [[[Float]]](repeating: [], count: prompts.count)
    for (c, p) in zip(contexts, prompts) { try c.eval(tokens: p) }
    if !batched {
        for (i, c) in contexts.enumerated() {
            for _ in 0..<steps[i] {
                let l = try c.logits()
                rows[i].append(Array(l))
                try c.eval(tokens: [argmax(l)])
            }
        }
        return rows
    }
    var step = 0
    while true {
        // A sequence that is done leaves the batch: the others go on in a smaller one.
        let running = contexts.indices.filter { step < steps[$0] }
        if running.isEmpty { break }
        var tokens: [Int32] = []
        for i in running {
            let l = try contexts[i].logits()
            rows[i].append(Array(l))
            tokens.append(argmax(l))
        }
        let errors = InferenceContext.decodeStep(running.map { contexts[$0] }, tokens: tokens)
        for e in errors { if let e { throw e } }
        step += 1
    }
    return rows
}

private let prompts: [[Int32]] = [[1, 5, 9, 2], [3, 3, 7], [11, 4, 6, 8, 10, 12, 1], [2]]
private let steps = [12, 5, 9, 12]

/// On the batch-invariant (scalar) path a row's matmul does not depend on the other rows, and attention and
/// the conv state are per sequence: every logit is bit-identical to the sequence decoded alone, for every
/// weight type.
@Test(arguments: tinyModels)
func steppedDecodeGivesEachSequenceItsLogitsAloneBitForBit(name: String) throws {
    let model = try loadTiny(name)
    let (alone, together) = try #require(try batchInvariantPath.withThreadSelection {
        (try greedyLogits(model, prompts: prompts, steps: steps, batched: false),
         try greedyLogits(model, prompts: prompts, steps: steps, batched: true))
    })
    for i in prompts.indices {
        #expect(together[i].count == steps[i])
        for s in 0..<steps[i] {
            let same = zip(alone[i][s], together[i][s]).allSatisfy { $0.bitPattern == $1.bitPattern }
            #expect(same, "\(name): sequence \(i), step \(s) differs from the sequence alone")
        }
    }
}

/// On the default SIMD path Q4_0 and Q8_0 gemm tiles reproduce the one-token kernels bit for bit
/// (LeapKernelsTests batchesOf1To17TokensEqualOneTokenCallsOnEveryPath), and the attention of a one-row span
/// takes the one-token order: the files the stepped batch is for decode exactly as alone there too.
@Test(arguments: ["lfm2-tiny-q8_0", "lfm2-tiny-q4_0-16l"])
func steppedDecodeOfQ4_0AndQ8_0IsExactOnTheDefaultPath(name: String) throws {
    let model = try loadTiny(name)
    let alone = try greedyLogits(model, prompts: prompts, steps: steps, batched: false)
    let together = try greedyLogits(model, prompts: prompts, steps: steps, batched: true)
    for i in prompts.indices {
        for s in 0..<steps[i] {
            let same = zip(alone[i][s], together[i][s]).allSatisfy { $0.bitPattern == $1.bitPattern }
            #expect(same, "\(name): sequence \(i), step \(s) differs from the sequence alone")
        }
    }
}

/// A member that cannot step (full context, bad token, listed twice) gets its error and stays unchanged;
/// the others step.
@Test func aMemberThatCannotStepIsLeftOutOfTheBatch() throws {
    let model = try loadTiny("lfm2-tiny-q8_0")
    let full = try model.makeContext(contextSize: 4)
    try full.eval(tokens: [1, 2, 3, 4])
    let a = try model.makeContext(contextSize: 16), b = try model.makeContext(contextSize: 16)
    try a.eval(tokens: [1, 2])
    try b.eval(tokens: [3])
    let errors = InferenceContext.decodeStep([a, full, b, a, b], tokens: [5, 6, Int32(model.config.nVocab), 7, 8])
    #expect(errors[0] == nil)
    #expect((errors[1] as? LeapError)?.kind == .promptExceedsContext)
    #expect((errors[2] as? LeapError)?.kind == .invalidArgument)  // token out of range: b unchanged
    #expect((errors[3] as? LeapError)?.kind == .invalidArgument)  // a twice
    #expect(errors[4] == nil)
    #expect(a.nPast == 3 && full.nPast == 4 && b.nPast == 2)
    // b stepped with token 8 (its second request), exactly as alone.
    let ref = try model.makeContext(contextSize: 16)
    try ref.eval(tokens: [3])
    try ref.eval(tokens: [8])
    #expect(Array(try b.logits()) == Array(try ref.logits()))
}

/// The logits buffer follows the last eval: all-positions logits of a long batch are given back at the next
/// one-token eval instead of staying mapped for the life of the context.
@Test func theLogitsBufferShrinksBack() throws {
    let model = try loadTiny("lfm2-tiny-q8_0")
    let ctx = try model.makeContext(contextSize: 64)
    let rowBytes = model.config.outputWidth * 4
    try ctx.eval(tokens: [Int32](repeating: 3, count: 40), wantAllLogits: true)
    #expect(ctx.logitsBufferBytes == 40 * rowBytes)
    try ctx.eval(tokens: [4])
    #expect(ctx.logitsBufferBytes == rowBytes)
    try ctx.eval(tokens: [5, 6], wantAllLogits: true)  // within twice: kept
    #expect(ctx.logitsBufferBytes == 2 * rowBytes)
    try ctx.eval(tokens: [7])
    #expect(ctx.logitsBufferBytes == 2 * rowBytes)
}

/// Logits of a long prompt (every position) and of greedy steps after it, with attention tiles of `tile` keys.
private func longContextLogits(_ model: LanguageModel, tile: Int, kv: KVCacheType) throws -> [[Float]] {
    var o = ContextOptions(contextSize: 720, kvCacheType: kv)
    o.attentionTile = tile
    let ctx = try model.makeContext(o)
    var s: UInt64 = 99
    let V = Int32(model.config.nVocab)
    let prompt: [Int32] = (0..<680).map { _ in
        s = s &* 6364136223846793005 &+ 1442695040888963407
        return Int32(s >> 33) % V
    }
    try ctx.eval(tokens: prompt, wantAllLogits: true)
    var rows = try (0..<prompt.count).map { Array(try ctx.logits(at: $0)) }
    for _ in 0..<16 {
        let tok = argmax(try ctx.logits())
        try ctx.eval(tokens: [tok])
        rows.append(Array(try ctx.logits()))
    }
    return rows
}

/// Tiled attention (online softmax over 64-key tiles, scratch independent of the context length) against
/// the one-pass softmax, over 696 positions: prefill rows see up to 11 tiles, decode rows 11.
/// F32 cache: only the summation order differs (sums of exponentials per tile, O rescaled per tile), a few
/// ulps per attention output; 1e-5 of the logits' range (~100 ulps of the largest logit) bounds that through
/// the layers, while an indexing or rescaling mistake gives O(1). F16 cache: P is rounded to F16 unnormalized
/// instead of normalized (2^-11 relative per probability either way, at different values): 1e-3, the F16
/// rounding of 2^-11 with room for its propagation through the layers.
/// Both on the scalar path and on the default (SIMD) one, whose one-row tiles take the one-token F16 kernel.
@Test(arguments: [KVCacheType.f32, .f16], [true, false])
func tiledAttentionMatchesTheOnePassSoftmaxAtLongContexts(kv: KVCacheType, scalar: Bool) throws {
    let model = try loadTiny("lfm2-tiny-f32")
    let run = { (try longContextLogits(model, tile: 4096, kv: kv), try longContextLogits(model, tile: 64, kv: kv)) }
    let (onePass, tiled) = scalar ? try #require(try batchInvariantPath.withThreadSelection(run)) : try run()
    var worst: Float = 0, range: Float = 0
    for (a, b) in zip(onePass, tiled) {
        for (x, y) in zip(a, b) {
            worst = max(worst, abs(x - y))
            range = max(range, abs(x))
        }
    }
    print("tiled vs one-pass attention (\(kv), \(scalar ? "scalar" : "default") path): max |Δlogit| \(worst) of range \(range)")
    #expect(worst > 0 || kv == .f32)  // the tiled path was taken (F16 rounding of P differs for sure)
    #expect(worst <= (kv == .f32 ? 1e-5 : 1e-3) * range)
}

/// Spans of several rows (a token and its drafts) beside one-token rows of other sequences in one pass: each
/// sequence keeps every row's logits as its own verification pass alone gives them, bit for bit, and ends in
/// the same state.
@Test(arguments: ["lfm2-tiny-q8_0", "llama3-tiny-q8_0"])
func spansOfSeveralSequencesInOnePassGiveEachItsRowsAlone(name: String) throws {
    let model = try loadTiny(name)
    let prefixes: [[Int32]] = [[1, 5, 9, 2], [3, 3, 7], [11, 4, 6, 8, 10, 12, 1], [2]]
    let spans: [[Int32]] = [[4, 8, 15, 16, 23], [42], [7, 7, 7, 1, 2, 3, 4], [9, 10]]   // 15 rows
    let together = try prefixes.map { p in
        let c = try model.makeContext(contextSize: 32)
        try c.eval(tokens: p)
        return c
    }
    let errors = InferenceContext.decodeStep(together, spans: spans)
    #expect(errors.allSatisfy { $0 == nil })
    for (i, p) in prefixes.enumerated() {
        let alone = try model.makeContext(contextSize: 32)
        try alone.eval(tokens: p)
        try alone.evalDraft(tokens: spans[i])
        #expect(together[i].nPast == p.count + spans[i].count)
        for r in spans[i].indices {
            let same = zip(try together[i].logits(at: r), try alone.logits(at: r)).allSatisfy { $0.bitPattern == $1.bitPattern }
            #expect(same, "\(name): sequence \(i), row \(r) differs from its pass alone")
        }
        // Both continue alike from the last row.
        try alone.eval(tokens: [5])
        try together[i].eval(tokens: [5])
        #expect(Array(try together[i].logits()).map(\.bitPattern) == Array(try alone.logits()).map(\.bitPattern))
    }
}

/// A span that does not fit in the rows left of the pass (the first member's scratch) is left out, unchanged.
@Test func aSpanBeyondTheScratchOfThePassIsLeftOut() throws {
    let model = try loadTiny("lfm2-tiny-q8_0")
    var o = ContextOptions(contextSize: 16)
    o.maxBatch = 4
    let small = try model.makeContext(o)
    let other = try model.makeContext(contextSize: 16)
    try small.eval(tokens: [1])
    try other.eval(tokens: [2])
    let errors = InferenceContext.decodeStep([small, other], spans: [[3, 4, 5], [6, 7]])
    #expect(errors[0] == nil)
    #expect((errors[1] as? LeapError)?.kind == .invalidArgument)
    #expect(small.nPast == 4 && other.nPast == 1)
    #expect(InferenceContext.decodeStep([other], spans: [[]])[0] != nil)
}
