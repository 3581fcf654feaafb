import CLeapKernels
import Testing
import LeapCore
import LeapModels
import LeapPromptCache

// A restored prefix continues exactly as the context it was saved from, and (on the scalar path, where the
// kernels give the same result for any batch split) exactly as a context that evaluated the whole prompt
// at once.

private func snapshotRoundTrip(_ state: ContextState, units: [PrefixUnit], identity: ModelIdentity) throws -> ContextState {
    let bytes = SnapshotFormat.encode(PromptSnapshot(units: units, state: state), identity: identity)
    return try SnapshotFormat.decode(bytes, identity: identity, shape: state.shape).state
}

@Test(arguments: ["lfm2-tiny-f32", "lfm2-tiny-q8_0", "lfm2moe-tiny-q8_0", "llama3-tiny-f32"])
func restoredPrefixContinuesBitForBitOnTheScalarPath(name: String) throws {
    #expect(lk_set_thread_isa(Int32(LK_ISA_SCALAR)) == 1)
    defer { lk_set_thread_isa(-1) }
    let (file, model) = try loadTinyFile(name)
    let identity = ModelIdentity(file: file)
    let V = model.config.nVocab
    let prefix = tokens(40, seed: 1, vocab: V), suffix = tokens(9, seed: 2, vocab: V)
    // Reference: the whole prompt in one evaluation, then three greedy steps.
    let whole = try model.makeContext(contextSize: 96)
    try whole.eval(tokens: prefix + suffix)
    // Saved: the prefix in one context, its state through the file format into another.
    let source = try model.makeContext(contextSize: 96)
    try source.eval(tokens: prefix)
    let units = prefix.map { PrefixUnit.token($0) }
    let state = try snapshotRoundTrip(try source.captureState(positions: prefix.count), units: units, identity: identity)
    let restored = try model.makeContext(contextSize: 128)
    try restored.eval(tokens: tokens(70, seed: 3, vocab: V))   // old contents must not matter
    try restored.restoreState(state)
    #expect(restored.nPast == prefix.count)
    try restored.eval(tokens: suffix)
    #expect(bitsEqual(try restored.logits(), try whole.logits()))
    for _ in 0..<3 {
        let a = try whole.logits(), b = try restored.logits()
        let next = Int32(a.indices.max { a[$0] < a[$1] } ?? 0)
        #expect(bitsEqual(a, b))
        try whole.eval(tokens: [next])
        try restored.eval(tokens: [next])
    }
    #expect(bitsEqual(try restored.logits(), try whole.logits()))
}

@Test(arguments: [Int32(LK_ISA_SCALAR), Int32(LK_ISA_AVX2), Int32(LK_ISA_AVX512)])
func restoredPrefixMatchesTheSplitEvaluationOnEveryPath(isa: Int32) throws {
    guard lk_set_thread_isa(isa) == 1 else { return }   // path not available on this CPU
    defer { lk_set_thread_isa(-1) }
    let (file, model) = try loadTinyFile("lfm2-tiny-q4_k")
    let identity = ModelIdentity(file: file)
    let V = model.config.nVocab
    // A suffix of 16+ tokens: the gemm kernels on every path (2-15 tokens take the few-token kernels, in the
    // one-token order, whose results differ from the whole prompt's as token-by-token decode's do: 1.8e-2
    // relative RMS on the AVX2 path for this tiny random model, bit for bit the same as decoding them one by one).
    let prefix = tokens(33, seed: 4, vocab: V), suffix = tokens(17, seed: 5, vocab: V)
    // The same two evaluations with and without the snapshot in between: equal bits on any path.
    let split = try model.makeContext(contextSize: 64)
    try split.eval(tokens: prefix)
    let state = try snapshotRoundTrip(try split.captureState(positions: prefix.count), units: prefix.map { .token($0) }, identity: identity)
    try split.eval(tokens: suffix)
    let restored = try model.makeContext(contextSize: 64)
    try restored.restoreState(state)
    try restored.eval(tokens: suffix)
    #expect(bitsEqual(try restored.logits(), try split.logits()))
    // Against the whole prompt at once: SIMD kernels group a batch's rows differently (tiles of 4 tokens and
    // their remainders), which changes float summation order only: relative error ~1e-6 per product, which the F16 KV
    // cache can turn into one F16 ulp (4.9e-4 relative) of a cached value; 2e-3 allows a few of those.
    let whole = try model.makeContext(contextSize: 64)
    try whole.eval(tokens: prefix + suffix)
    let err = relativeRMS(Array(try restored.logits()), Array(try whole.logits()))
    #expect(err < 2e-3, "relative RMS \(err)")
}

@Test func restoredStateReplaysForADeepRewindAndKeepsEmbeddingRows() throws {
    #expect(lk_set_thread_isa(Int32(LK_ISA_SCALAR)) == 1)
    defer { lk_set_thread_isa(-1) }
    let (file, model) = try loadTinyFile("lfm2-tiny-f32")
    let identity = ModelIdentity(file: file)
    let V = model.config.nVocab, E = model.config.nEmbd
    let head = tokens(10, seed: 6, vocab: V), tail = tokens(8, seed: 7, vocab: V)
    let rows = (0..<(3 * E)).map { Float(($0 * 37) % 101) / 101 - 0.5 }   // 3 media rows
    let source = try model.makeContext(contextSize: 64)
    try source.eval(tokens: head)
    try rows.withUnsafeBufferPointer { try source.eval(embeddings: $0) }
    try source.eval(tokens: tail)
    let digest = [UInt8](repeating: 7, count: 32)
    let units = head.map { PrefixUnit.token($0) } + (0..<3).map { PrefixUnit.media(digest: digest, row: $0) } + tail.map { .token($0) }
    let state = try snapshotRoundTrip(try source.captureState(positions: units.count), units: units, identity: identity)
    #expect(state.embeddingRows == rows)
    let restored = try model.makeContext(contextSize: 64)
    try restored.restoreState(state)
    // A rewind into the prefix replays it from the saved inputs, media rows included.
    try restored.rewind(to: 12)
    try source.rewind(to: 12)
    let probe = tokens(3, seed: 8, vocab: V)
    try restored.eval(tokens: probe)
    try source.eval(tokens: probe)
    #expect(bitsEqual(try restored.logits(), try source.logits()))
}

@Test func restoreRefusesAnotherShapeAndChangesNothing() throws {
    let (_, model) = try loadTinyFile("lfm2-tiny-f32")
    let V = model.config.nVocab
    let a = try model.makeContext(contextSize: 32)
    try a.eval(tokens: tokens(20, seed: 9, vocab: V))
    let state = try a.captureState(positions: 20)
    let f32 = try model.makeContext(ContextOptions(contextSize: 32, kvCacheType: .f32))
    try f32.eval(tokens: [1, 2])
    #expect(throws: LeapError.self) { try f32.restoreState(state) }
    #expect(f32.nPast == 2)
    let small = try model.makeContext(contextSize: 16)
    #expect(throws: LeapError.self) { try small.restoreState(state) }
    var broken = state
    broken.kv.removeLast()
    #expect(throws: LeapError.self) { try a.restoreState(broken) }
    #expect(a.nPast == 20)
}
