import Testing
import LeapCore
import LeapKernels
import LeapModels

/// Logits of the last position and the last hidden state after evaluating `tokens`, some of them given as
/// their embedding rows: `asRows` says which ranges go in as rows.
private func run(_ model: LanguageModel, _ tokens: [Int32], asRows: [Range<Int>], contextSize: Int = 256) throws -> (logits: [Float], hidden: [Float]) {
    let ctx = try model.makeContext(contextSize: contextSize)
    var i = 0
    for r in asRows + [tokens.count..<tokens.count] {
        if i < r.lowerBound { try ctx.eval(tokens: Array(tokens[i..<r.lowerBound])) }
        if !r.isEmpty {
            var rows: [Float] = []
            for t in tokens[r] { rows += try model.tokenEmbedding(t) }
            try rows.withUnsafeBufferPointer { try ctx.eval(embeddings: $0) }
        }
        i = r.upperBound
    }
    return (Array(try ctx.logits()), Array(try ctx.lastHiddenState()))
}

// A token's embedding row given as input is the token: the same forward pass follows, bit for bit, on every
// kernel path (the passes split at the same places).
@Test(arguments: ["lfm2-tiny-f32", "lfm2-tiny-q4_k", "lfm2-tiny-q8_0", "qwen3-tiny-q8_0"])
func embeddingRowsStandForTheirTokens(name: String) throws {
    let (tokens, _, _) = try numpyGolden(name.hasPrefix("qwen3") ? "lfm2-tiny-f32" : name)
    let model = try loadTiny(name)
    let ids = tokens.map { $0 % Int32(model.config.nVocab) }
    let plain = try run(model, ids, asRows: [])
    let allRows = try run(model, ids, asRows: [0..<ids.count])
    #expect(plain.logits == allRows.logits)
    #expect(plain.hidden == allRows.hidden)
}

// A tied output is packed at load where the kernel path prefers the 8-row layout for its type (Q8_0 on AVX2,
// AVX-512 VNNI and arm64 with dotprod), and the token embedding is read back out of that copy: every row, at
// each of the 8 places of a group, equals the file's row dequantized by the GGUF reader's own code.
@Test(arguments: ["lfm2-tiny-q8_0", "llama3-tiny-q8_0"])
func embeddingRowsEqualTheFilesRows(name: String) throws {
    let model = try loadTiny(name)
    let embedding = try #require(model.file.tensor(named: "token_embd.weight"))
    for t in 0..<model.config.nVocab {
        #expect(try model.tokenEmbedding(Int32(t)) == model.file.dequantizeRow(embedding, t), "token \(t)")
    }
}

// Mixed runs of tokens and rows, with a deep rewind that must replay the rows (the conv state at the rewind
// point has left the ring): on the batch-invariant path the result equals evaluating the tokens straight.
@Test func deepRewindReplaysEmbeddingRows() throws {
    let model = try loadTiny("lfm2-tiny-f32")
    let V = Int32(model.config.nVocab)
    let ids: [Int32] = (0..<700).map { Int32(($0 * 7919 + 13) % Int(V)) }
    let same = try #require(try batchInvariantPath.withThreadSelection { () throws -> Bool in
        let straight = try run(model, ids, asRows: [], contextSize: 1024)
        let ctx = try model.makeContext(contextSize: 1024)
        try ctx.eval(tokens: Array(ids[0..<10]))
        var rows: [Float] = []
        for t in ids[10..<40] { rows += try model.tokenEmbedding(t) }
        try rows.withUnsafeBufferPointer { try ctx.eval(embeddings: $0) }
        try ctx.eval(tokens: Array(ids[40..<700]))
        try ctx.rewind(to: 50)                       // 650 positions back: past the conv ring
        try ctx.eval(tokens: Array(ids[50..<700]))
        return Array(try ctx.logits()) == straight.logits
    })
    #expect(same)
}

@Test func badEmbeddingInputChangesNothing() throws {
    let model = try loadTiny("lfm2-tiny-f32")
    let E = model.config.nEmbd
    let ctx = try model.makeContext(contextSize: 8)
    try ctx.eval(tokens: [1, 2, 3])
    let before = Array(try ctx.logits())
    func expectRefused(_ rows: [Float], _ kind: LeapError.Kind, _ fragment: String) {
        do {
            try rows.withUnsafeBufferPointer { try ctx.eval(embeddings: $0) }
            Issue.record("accepted \(rows.count) floats")
        } catch let e as LeapError {
            #expect(e.kind == kind)
            #expect(e.message.contains(fragment), "\(e.message)")
        } catch { Issue.record("\(error)") }
        #expect(ctx.nPast == 3)
    }
    expectRefused([Float](repeating: 0.1, count: E + 1), .invalidArgument, "whole number")
    expectRefused([], .invalidArgument, "whole number")
    var nan = [Float](repeating: 0.1, count: 2 * E)
    nan[E + 3] = .nan
    expectRefused(nan, .invalidArgument, "row 1")
    expectRefused([Float](repeating: 0.1, count: 6 * E), .promptExceedsContext, "do not fit")
    #expect(Array(try ctx.logits()) == before)
}
