// ContextState: a copy of what an InferenceContext needs to continue a sequence after its first n positions
// exactly as if it had evaluated them itself (a saved prompt prefix):
//   - the KV cache rows of positions 0..<n (every attention layer, the cache's element type);
//   - for LFM2's short-convolution layers, the gated inputs u of the L-1 positions before n (what the next
//     position's convolution reads; older ones are never read again);
//   - the inputs log of those positions (token ids, and the embedding rows of positions that took one), so
//     that a later rewind below n can replay the prefix.
// `capture` copies these out of a live context; `restore` checks the shape and overwrites a context with them.
import CLeapKernels
import LeapCore

/// What a context's state looks like: two states can be exchanged only between contexts of one shape.
package struct ContextStateShape: Equatable, Sendable {
    package var kvCacheType: KVCacheType
    /// n_head_kv · head_dim of each attention layer, in layer order.
    package var kvDims: [Int]
    /// Short-convolution layers, and the positions of u each keeps (L - 1).
    package var convLayers: Int
    package var convRows: Int
    package var embeddingLength: Int

    package init(kvCacheType: KVCacheType, kvDims: [Int], convLayers: Int, convRows: Int, embeddingLength: Int) {
        self.kvCacheType = kvCacheType
        self.kvDims = kvDims
        self.convLayers = convLayers
        self.convRows = convRows
        self.embeddingLength = embeddingLength
    }

    /// Bytes of the KV rows of `positions` positions.
    package func kvBytes(positions: Int) throws -> Int {
        var n = 0
        for d in kvDims { n += try checkedSize(2, positions, d, kvCacheType.elementBytes, what: "saved KV cache") }
        return n
    }

    /// Floats of the conv state (the same for every position count).
    package var convFloats: Int { convLayers * convRows * embeddingLength }
}

/// The state of the first `positions` positions of a context (see the file comment).
package struct ContextState: Sendable {
    package var shape: ContextStateShape
    package var positions: Int
    /// The input of every position: a token id, or `InferenceContext.embeddingInput` for an embedding row.
    package var inputs: [Int32]                     // [positions]
    /// The rows of the positions that took one, in order.
    package var embeddingRows: [Float]              // [embedding positions, E]
    /// Per attention layer: its K rows of positions 0..<n ([n][kvDim]), then its Vᵀ columns ([kvDim][n]).
    package var kv: [UInt8]
    /// Per conv layer, u of positions n-(L-1)..<n ([convLayers][L-1][E]; rows before position 0 are zero).
    package var conv: [Float]

    package init(shape: ContextStateShape, positions: Int, inputs: [Int32], embeddingRows: [Float], kv: [UInt8], conv: [Float]) {
        self.shape = shape
        self.positions = positions
        self.inputs = inputs
        self.embeddingRows = embeddingRows
        self.kv = kv
        self.conv = conv
    }

    /// Approximate bytes held in memory.
    package var byteCount: Int { kv.count + conv.count * 4 + inputs.count * 4 + embeddingRows.count * 4 }

    /// Throws unless the parts have the sizes the shape and position count say (a state read from a file
    /// is checked with this before it reaches a context).
    package func validate() throws {
        let E = shape.embeddingLength
        guard positions >= 0, inputs.count == positions else {
            throw LeapError(.format, "saved state of \(positions) positions has \(inputs.count) inputs")
        }
        let rowInputs = inputs.reduce(0) { $0 + ($1 == InferenceContext.embeddingInput ? 1 : 0) }
        guard embeddingRows.count == rowInputs * E else {
            throw LeapError(.format, "saved state has \(rowInputs) embedding positions but \(embeddingRows.count) floats of rows (\(E) per row)")
        }
        if let bad = inputs.firstIndex(where: { $0 < InferenceContext.embeddingInput }) {
            throw LeapError(.format, "saved state input \(bad) is \(inputs[bad]), not a token id or an embedding row")
        }
        guard kv.count == (try shape.kvBytes(positions: positions)) else {
            throw LeapError(.format, "saved state has \(kv.count) bytes of KV cache; \(positions) positions of its shape need \(try shape.kvBytes(positions: positions))")
        }
        guard conv.count == shape.convFloats else {
            throw LeapError(.format, "saved state has \(conv.count) floats of conv state; its shape needs \(shape.convFloats)")
        }
    }
}

extension InferenceContext {
    /// The shape of this context's state.
    package var stateShape: ContextStateShape {
        ContextStateShape(kvCacheType: kvCacheType, kvDims: kv.kvDims, convLayers: convRing == nil ? 0 : convSlotCount,
                          convRows: convRing == nil ? 0 : cfg.convLCache - 1, embeddingLength: cfg.nEmbd)
    }

    private var convSlotCount: Int {
        model.weights.layers.reduce(0) { n, l in if case .shortConv = l.mixer { return n + 1 } else { return n } }
    }

    /// True when the state of the first `n` positions can still be copied out: the conv inputs of the
    /// L-1 positions before `n` are still in the ring (the KV rows of every evaluated position always are).
    package func canCaptureState(positions n: Int) -> Bool {
        guard n >= 0, n <= nPast else { return false }
        return convRing == nil || max(0, n - (cfg.convLCache - 1)) >= convValidFrom
    }

    /// A copy of the state of the first `n` positions (n <= nPast). Throws when the conv state at `n` has
    /// left the ring (`canCaptureState`).
    package func captureState(positions n: Int) throws -> ContextState {
        guard canCaptureState(positions: n) else {
            throw LeapError(.invalidArgument, "the state of the first \(n) positions is no longer held (the context holds \(nPast); conv inputs from position \(convValidFrom) on)")
        }
        let shape = stateShape
        var kvOut = [UInt8](repeating: 0, count: try shape.kvBytes(positions: n))
        let eb = kvCacheType.elementBytes
        kvOut.withUnsafeMutableBytes { dst in
            guard let base = dst.baseAddress else { return }
            var o = 0
            for (slot, d) in kv.kvDims.enumerated() {
                if n > 0 { (base + o).copyMemory(from: kv.kRow(slot, 0), byteCount: n * d * eb) }
                o += n * d * eb
                for dim in 0..<d {
                    (base + o).copyMemory(from: kv.vRow(slot, dim), byteCount: n * eb)
                    o += n * eb
                }
            }
        }
        var convOut = [Float](repeating: 0, count: shape.convFloats)
        if let ring = convRing?.floats() {
            let E = cfg.nEmbd, R = shape.convRows
            for slot in 0..<shape.convLayers {
                for r in 0..<R {
                    let q = n - R + r
                    guard q >= 0 else { continue }
                    let src = UnsafeBufferPointer(start: ring + (slot * ringSize + q % ringSize) * E, count: E)
                    convOut.replaceSubrange(((slot * R + r) * E)..<((slot * R + r + 1) * E), with: src)
                }
            }
        }
        let rows = inputs[0..<n].reduce(0) { $0 + ($1 == Self.embeddingInput ? 1 : 0) }
        return ContextState(shape: shape, positions: n, inputs: Array(inputs[0..<n]),
                            embeddingRows: Array(embeddingLog[0..<rows * cfg.nEmbd]), kv: kvOut, conv: convOut)
    }

    /// Replaces this context's sequence with `state`: afterwards it holds `state.positions` positions and
    /// continues as the context it was captured from would. Everything is checked first (shape, sizes,
    /// token ids, fit): on a throw the context is unchanged.
    package func restoreState(_ state: ContextState) throws {
        try state.validate()
        guard state.shape == stateShape else {
            throw LeapError(.invalidArgument, "saved state shape \(state.shape) does not match this context's \(stateShape)")
        }
        let n = state.positions
        guard n <= contextSize else {
            throw LeapError(.promptExceedsContext, "saved state of \(n) positions does not fit a context of \(contextSize)")
        }
        if let bad = state.inputs.firstIndex(where: { $0 != Self.embeddingInput && Int($0) >= cfg.nVocab }) {
            throw LeapError(.invalidArgument, "saved state input \(bad) is token id \(state.inputs[bad]), out of range 0..<\(cfg.nVocab)")
        }
        reset()
        let eb = kvCacheType.elementBytes
        state.kv.withUnsafeBytes { src in
            guard let base = src.baseAddress else { return }
            var o = 0
            for (slot, d) in kv.kvDims.enumerated() {
                if n > 0 { kv.kRow(slot, 0).copyMemory(from: base + o, byteCount: n * d * eb) }
                o += n * d * eb
                for dim in 0..<d {
                    kv.vRow(slot, dim).copyMemory(from: base + o, byteCount: n * eb)
                    o += n * eb
                }
            }
        }
        if let ring = convRing?.floats() {
            let E = cfg.nEmbd, R = state.shape.convRows
            for slot in 0..<state.shape.convLayers {
                for r in 0..<R {
                    let q = n - R + r
                    guard q >= 0 else { continue }
                    let dst = ring + (slot * ringSize + q % ringSize) * E
                    state.conv.withUnsafeBufferPointer { src in
                        if let s = src.baseAddress { dst.update(from: s + (slot * R + r) * E, count: E) }
                    }
                }
            }
        }
        nPast = n
        convValidFrom = max(0, n - (cfg.convLCache - 1))
        inputs.append(contentsOf: state.inputs)
        embeddingLog.append(contentsOf: state.embeddingRows)
    }
}
