// InferenceContext: the mutable state of one sequence — KV cache, LFM2 conv state, scratch buffers and
// logits — plus eval / rewind. Not thread-safe; create one per thread (the model is shared).
//
// Rewind and the LFM2 conv state: a short-conv layer needs the gated inputs u = B⊙x of the previous
// L-1 (= 2) positions. Instead of a 2-row rolling state we keep a ring of u for the last
// `ringSize = maxBatch + convHistory` positions evaluated, in every conv layer (a forward pass of up to
// maxBatch positions never overwrites the rows its first positions read). `rewind(to: n)` is free and
// exact while the L-1 positions before `n` are still in the ring (`convValidFrom`, the lowest position
// not yet overwritten, only moves up until `reset`): with the default maxBatch of 512, a rewind by up to
// 574 positions from the furthest position evaluated — a chat turn re-using the cached prompt. A deeper
// rewind resets and replays the kept prefix from the recorded inputs (token ids and embedding rows; exact,
// costs one prefill). Attention layers only need `nPast` to move back.
//
// Inputs: a position holds a token id or an embedding row given by the caller (an image or audio encoder's
// output, a generated audio frame's feedback embedding): `eval(tokens:)` and `eval(embeddings:)` share one
// forward pass, which starts from the rows instead of the token embedding table.
import CLeapKernels
import Glibc
import LeapCore
import LeapKernels

package final class InferenceContext {
    package let model: LanguageModel
    package let contextSize: Int
    package let kvCacheType: KVCacheType
    /// Positions evaluated so far (the next token goes to position `nPast`).
    package internal(set) var nPast = 0
    package var threadCount: Int { pool.threadCount }

    let cfg: ModelConfig
    let pool: ThreadPool
    /// Tokens per forward pass (ContextOptions.maxBatch): longer evals are split into passes of this size.
    package let maxBatch: Int
    let kv: KVCache
    // LFM2 conv ring: [convSlots][ringSize][E] of u = B⊙x.
    static let convHistory = 64
    let ringSize: Int
    let convRing: RawBuffer?
    var convValidFrom = 0               // lowest position whose u is still in the ring
    // Every evaluated input, for deep rewinds: a token id per position, `embeddingInput` where the position
    // took an embedding row; those rows are kept in order in `embeddingLog`.
    package static let embeddingInput: Int32 = -1
    var inputs: [Int32] = []             // [nPast]
    var embeddingLog: [Float] = []       // [embedding positions, E]
    /// The final-normed hidden state of the last evaluated position (what the output head multiplies).
    let hiddenOut: UnsafeMutablePointer<Float>  // [E]

    // Scratch, B = maxBatch rows.
    let x: UnsafeMutablePointer<Float>        // [B, E] residual stream
    let xn: UnsafeMutablePointer<Float>       // [B, E] normed input of a block
    let mix: UnsafeMutablePointer<Float>      // [B, E] block output
    let qBuf: UnsafeMutablePointer<Float>     // [B, H*hd]
    let kBuf: UnsafeMutablePointer<Float>     // [B, maxKV*hd]
    let vBuf: UnsafeMutablePointer<Float>     // [B, maxKV*hd]
    let attnOut: UnsafeMutablePointer<Float>  // [B, H*hd]
    let ffA: UnsafeMutablePointer<Float>      // [B, max(F, 3E)] gate / in_proj output
    let ffB: UnsafeMutablePointer<Float>      // [B, F] up
    let halfScratch: UnsafeMutablePointer<UInt16> // [B, max(H*hd, F)] F16 rounding
    let actBuffers: [UnsafeMutableRawPointer] // 3 × [B, max activation row bytes]
    let attnChunk: Int                        // query rows per attention task
    /// Keys per attention tile: a query row that sees more keys than this goes through the tiled (online
    /// softmax) path, so the score scratch is [threads][attnChunk, min(contextSize, attnTile)].
    let attnTile: Int
    let scoreColumns: Int                     // min(contextSize, attnTile)
    let attnScores: UnsafeMutablePointer<Float>   // [threads][attnChunk, scoreColumns]
    let attnHalf: UnsafeMutablePointer<UInt16>    // [threads][scoreColumns]
    let attnAccum: UnsafeMutablePointer<Float>    // [threads][2][attnChunk, headDim] tiled path: O and one tile's P·V
    let geluTable: [Float]?                   // ggml's F16 GELU table (Gemma)
    let moeScratch: MoEScratch?               // routed-expert layers (LFM2-MoE)
    var jobs: UnsafeMutablePointer<MatmulJob>
    private let buffers: [RawBuffer]

    // Logits of the last eval: `logitRowCount` rows of the output width (n_vocab, or a dense head's rows).
    var logitsBuffer: RawBuffer?
    var logitRowCount = 0
    var logitsFirstIndex = 0          // batch index of row 0
    var lastBatchCount = 0
    var stepLogits: RawBuffer?        // [rows, V] of a decode batch run on this context's scratch

    init(model: LanguageModel, options: ContextOptions) throws {
        self.model = model
        cfg = model.config
        let requested = options.contextSize ?? min(cfg.nCtxTrain, 4096)
        guard requested >= 1, requested <= 1 << 22 else {
            throw LeapError.invalidArgument("context size \(requested) is out of range 1...\(1 << 22)")
        }
        contextSize = requested
        kvCacheType = options.kvCacheType
        pool = try ThreadPool.shared(threads: options.threads ?? model.threads)
        maxBatch = max(1, min(options.maxBatch, 4096))
        let B = maxBatch
        let E = cfg.nEmbd, hd = cfg.headDim
        let qDim = cfg.nHead * hd, kvDim = cfg.maxHeadKV * hd
        let fMax = cfg.nFF.max() ?? 0
        var kvDims: [Int] = []
        var nConv = 0
        for l in model.weights.layers {
            switch l.mixer {
            case .attention(let a): kvDims.append(a.nHeadKV * hd)
            case .shortConv: nConv += 1
            }
        }
        kv = try KVCache(type: kvCacheType, contextSize: contextSize, kvDims: kvDims)
        ringSize = B + Self.convHistory
        convRing = nConv > 0 ? try RawBuffer(count: try checkedSize(nConv, ringSize, E, what: "conv state"), of: Float.self, what: "the conv state") : nil

        var bufs: [RawBuffer] = []
        func floats(_ n: Int, _ what: String) throws -> UnsafeMutablePointer<Float> {
            let b = try RawBuffer(count: try checkedSize(n, what: what), of: Float.self, what: what)
            bufs.append(b)
            return b.floats()
        }
        x = try floats(B * E, "activations")
        xn = try floats(B * E, "activations")
        mix = try floats(B * E, "activations")
        qBuf = try floats(B * qDim, "queries")
        kBuf = try floats(B * max(kvDim, 1), "keys")
        vBuf = try floats(B * max(kvDim, 1), "values")
        attnOut = try floats(B * qDim, "attention output")
        ffA = try floats(B * max(fMax, 3 * E), "feed-forward")
        ffB = try floats(B * fMax, "feed-forward")
        let hs = try RawBuffer(count: B * max(qDim, fMax, E), of: UInt16.self, what: "f16 scratch")
        bufs.append(hs)
        halfScratch = hs.halves()
        let maxCols = max(E, fMax, qDim)
        var acts: [UnsafeMutableRawPointer] = []
        for _ in 0..<3 {
            let b = try RawBuffer(bytes: try checkedSize(B, maxCols * 4 + 64, what: "activations"), what: "quantized activations")
            bufs.append(b)
            acts.append(b.base)
        }
        actBuffers = acts
        attnChunk = 32
        attnTile = options.attentionTile
        scoreColumns = min(contextSize, attnTile)
        let nt = pool.threadCount
        attnScores = try floats(try checkedSize(nt, attnChunk, scoreColumns, what: "attention scores"), "attention scores")
        attnAccum = try floats(try checkedSize(nt, 2 * attnChunk, hd, what: "attention"), "attention")
        let ah = try RawBuffer(count: try checkedSize(nt, scoreColumns, what: "attention"), of: UInt16.self, what: "attention")
        bufs.append(ah)
        attnHalf = ah.halves()
        buffers = bufs
        geluTable = cfg.activation == .geluTanh ? Self.makeGeluTable() : nil
        moeScratch = try MoEScratch(model.weights, maxBatch: B, nEmbd: E)
        jobs = UnsafeMutablePointer<MatmulJob>.allocate(capacity: 4)
        hiddenOut = .allocate(capacity: E)
        hiddenOut.initialize(repeating: 0, count: E)
        inputs.reserveCapacity(contextSize)
    }

    deinit {
        jobs.deallocate()
        hiddenOut.deallocate()
    }

    /// Bytes held by the KV cache and conv state.
    package var stateBytes: Int { kv.byteCount + (convRing?.byteCount ?? 0) }

    /// Evaluates `tokens` at positions nPast..<nPast+n. Logits are kept for the last token, or for every
    /// token when `wantAllLogits`. Throws `.promptExceedsContext` (and changes nothing) when they don't fit.
    package func eval(tokens newTokens: [Int32], wantAllLogits: Bool = false) throws {
        try newTokens.withUnsafeBufferPointer { try eval(tokens: $0, wantAllLogits: wantAllLogits) }
    }

    package func eval(tokens newTokens: UnsafeBufferPointer<Int32>, wantAllLogits: Bool = false) throws {
        let n = newTokens.count
        guard n > 0 else { throw LeapError.invalidArgument("eval needs at least one token") }
        // Fit first: a count that does not fit is never read (it may not describe readable memory).
        try checkFits(n, "tokens")
        for (i, t) in newTokens.enumerated() where t < 0 || Int(t) >= cfg.nVocab {
            throw LeapError.invalidArgument("token id \(t) at index \(i) is out of range 0..<\(cfg.nVocab)")
        }
        try evalInputs(count: n, what: "tokens", wantAllLogits: wantAllLogits) { start, m in
            .tokens(UnsafeBufferPointer(rebasing: newTokens[start..<start + m]))
        }
        inputs.append(contentsOf: newTokens)
    }

    /// Evaluates embedding rows ([n, E] floats, E = the model's embedding length) at positions
    /// nPast..<nPast+n, as `eval(tokens:)` does token ids: the rows enter the first layer as they are (no
    /// embedding scale). Throws (and changes nothing) for a ragged or non-finite input or one that doesn't fit.
    /// `outputHead: false` skips the output head: only `lastHiddenState()` is available afterwards (a speech
    /// model's audio frame reads the hidden state, not the text logits).
    package func eval(embeddings rows: UnsafeBufferPointer<Float>, wantAllLogits: Bool = false, outputHead: Bool = true) throws {
        let E = cfg.nEmbd
        guard !rows.isEmpty, rows.count % E == 0 else {
            throw LeapError.invalidArgument("embedding input of \(rows.count) floats is not a whole number (> 0) of rows of \(E)")
        }
        try checkFits(rows.count / E, "embedding rows")
        if let i = rows.firstIndex(where: { !$0.isFinite }) {
            throw LeapError.invalidArgument("embedding input value \(i) (row \(i / E)) is not finite")
        }
        guard let base = rows.baseAddress else { return }
        let n = rows.count / E
        try evalInputs(count: n, what: "embedding rows", wantAllLogits: wantAllLogits && outputHead, outputHead: outputHead) { start, _ in
            .embeddings(base + start * E)
        }
        inputs.append(contentsOf: repeatElement(Self.embeddingInput, count: n))
        embeddingLog.append(contentsOf: rows)
    }

    /// Throws `.promptExceedsContext` unless `n` more positions fit.
    private func checkFits(_ n: Int, _ what: String) throws {
        guard n <= contextSize - nPast else {
            throw LeapError(.promptExceedsContext,
                "\(n) \(what) do not fit in the context: \(nPast) of \(contextSize) positions are used")
        }
    }

    /// Splits `count` inputs into forward passes of at most maxBatch (`chunk(start, m)` gives each pass's
    /// input) and keeps the logits asked for.
    private func evalInputs(count n: Int, what: String, wantAllLogits: Bool, outputHead: Bool = true,
                            chunk: (_ start: Int, _ m: Int) -> ForwardInput) throws {
        try checkFits(n, what)
        let V = cfg.outputWidth
        let rows = wantAllLogits ? n : 1
        let logits = try logitsStorage(rows: rows).floats()
        var done = 0
        while done < n {
            let m = min(maxBatch, n - done)
            let isLast = done + m == n
            // One forward pass at a time per pool (the pool and its threads are shared by every context).
            pool.exclusive {
                if wantAllLogits {
                    forward(chunk(done, m), count: m, pos0: nPast, logitsFrom: 0, into: logits + done * V)
                } else {
                    forward(chunk(done, m), count: m, pos0: nPast, logitsFrom: isLast ? m - 1 : m, into: logits,
                            outputHead: outputHead)
                }
            }
            nPast += m
            convValidFrom = max(convValidFrom, nPast - ringSize)
            done += m
        }
        lastBatchCount = n
        logitRowCount = outputHead ? rows : 0
        logitsFirstIndex = wantAllLogits ? 0 : n - 1
    }

    /// The logits buffer, sized for `rows` rows of the output width: kept while it is at most twice that,
    /// so that one eval asking for every position's logits does not pin its buffer for the life of the context.
    func logitsStorage(rows: Int) throws -> RawBuffer {
        let needed = try checkedSize(rows, cfg.outputWidth, 4, what: "logits")
        if let b = logitsBuffer, b.byteCount >= needed, b.byteCount / 2 <= needed { return b }
        logitsBuffer = nil  // unmapped before the new one is mapped
        let b = try RawBuffer(bytes: needed, what: "logits")
        logitsBuffer = b
        return b
    }

    /// Bytes held by the logits buffer (what `logitsStorage` kept from the last eval).
    package var logitsBufferBytes: Int { logitsBuffer?.byteCount ?? 0 }

    /// Bookkeeping of a pass that evaluated `tokens` at nPast... with every row's logits in place: as
    /// `evalDraft(tokens:)` leaves it (for one token, as `eval(tokens: [token])` does).
    func acceptSpan(tokens: [Int32]) {
        nPast += tokens.count
        convValidFrom = max(convValidFrom, nPast - ringSize)
        inputs.append(contentsOf: tokens)
        lastBatchCount = tokens.count
        logitRowCount = tokens.count
        logitsFirstIndex = 0
    }

    /// The final-normed hidden state of the last position evaluated ([E]; what the output head multiplies,
    /// and what a speech model's audio decoder reads). Valid until the next eval.
    package func lastHiddenState() throws -> UnsafeBufferPointer<Float> {
        guard lastBatchCount > 0 else {
            throw LeapError.invalidArgument("no hidden state: nothing has been evaluated since the context was created or rewound")
        }
        return UnsafeBufferPointer(start: hiddenOut, count: cfg.nEmbd)
    }

    /// Logits of batch index `index` of the last eval (negative counts from the end: -1 = last token).
    /// Valid until the next eval / rewind. Only the last index is available unless all logits were requested.
    package func logits(at index: Int = -1) throws -> UnsafeBufferPointer<Float> {
        guard lastBatchCount > 0, let buf = logitsBuffer else {
            throw LeapError.invalidArgument("no logits: nothing has been evaluated since the context was created or rewound")
        }
        let i = index < 0 ? lastBatchCount + index : index
        guard i >= logitsFirstIndex, i < logitsFirstIndex + logitRowCount else {
            let avail = logitRowCount == 0 ? "none (evaluated without the output head)"
                : logitRowCount == 1 ? "only the last token (index \(lastBatchCount - 1) or -1)" : "0..<\(lastBatchCount)"
            throw LeapError.invalidArgument("logits index \(index) is not available; the last eval kept \(avail)")
        }
        return UnsafeBufferPointer(start: buf.floats() + (i - logitsFirstIndex) * cfg.outputWidth, count: cfg.outputWidth)
    }

    /// Keeps the first `n` positions and forgets the rest (see the header comment for the conv state).
    package func rewind(to n: Int) throws {
        guard n >= 0, n <= nPast else {
            throw LeapError.invalidArgument("cannot rewind to \(n): the context holds \(nPast) positions")
        }
        lastBatchCount = 0
        if n == nPast { return }
        let keptRows = inputs[0..<n].reduce(0) { $0 + ($1 == Self.embeddingInput ? 1 : 0) }
        let need = max(0, n - (cfg.convLCache - 1))
        if convRing == nil || need >= convValidFrom {
            nPast = n
            inputs.removeLast(inputs.count - n)
            embeddingLog.removeLast(embeddingLog.count - keptRows * cfg.nEmbd)
            return
        }
        // The conv state at `n` has left the ring: recompute the prefix, run by run of tokens / rows.
        let prefix = Array(inputs[0..<n])
        let rows = Array(embeddingLog[0..<keptRows * cfg.nEmbd])
        reset()
        var i = 0, row = 0
        while i < n {
            var j = i
            let isRow = prefix[i] == Self.embeddingInput
            while j < n && (prefix[j] == Self.embeddingInput) == isRow { j += 1 }
            if isRow {
                try rows.withUnsafeBufferPointer { try eval(embeddings: UnsafeBufferPointer(rebasing: $0[row * cfg.nEmbd..<(row + j - i) * cfg.nEmbd])) }
                row += j - i
            } else {
                try prefix.withUnsafeBufferPointer { try eval(tokens: UnsafeBufferPointer(rebasing: $0[i..<j])) }
            }
            i = j
        }
        lastBatchCount = 0
    }

    /// Forgets everything (a new sequence).
    package func reset() {
        nPast = 0
        convValidFrom = 0
        inputs.removeAll(keepingCapacity: true)
        embeddingLog.removeAll(keepingCapacity: true)
        lastBatchCount = 0
    }

    /// ggml's GELU table: gelu of every F16 input, rounded to F16 (GGML_GELU_FP16).
    static func makeGeluTable() -> [Float] {
        var t = [Float](repeating: 0, count: 65536)
        for h in 0..<65536 {
            let x = lk_f16_to_f32(UInt16(h))
            // 1 + a·x·x fused as GCC compiles ggml_gelu_f32 (with the plain product, one entry, x = -1.999, differs)
            let inner: Float = 0.797_884_560_802_865_4 * x * Float(1).addingProduct(0.044715 * x, x)
            let g: Float = 0.5 * x * (1 + tanhf(inner))
            t[h] = lk_f16_to_f32(lk_f32_to_f16(g))
        }
        return t
    }
}
