// One decode step of several sequences at once: each sequence evaluates one token at its own next position
// in its own KV cache and conv state, and the batch's rows go through the weights together (a matmul of n
// columns reads every weight once). Decode is memory-bound, so n sequences cost little more than one.
import LeapCore
import LeapKernels

extension InferenceContext {
    /// Whether `other` can share a forward pass with this context: same model, pool and KV cache type.
    package func canBatch(with other: InferenceContext) -> Bool {
        model === other.model && pool === other.pool && kvCacheType == other.kvCacheType
    }

    /// Evaluates `tokens[i]` in `contexts[i]` at its next position, for every i, in one forward pass on the
    /// first context's scratch; afterwards each context holds its token's logits as after `eval(tokens:)`.
    /// Returns one result per context: nil, or the error that left that context unchanged (a token out of
    /// range, a full context). A single context takes `eval(tokens:)` itself.
    package static func decodeStep(_ contexts: [InferenceContext], tokens: [Int32]) -> [(any Error)?] {
        var errors = [(any Error)?](repeating: nil, count: contexts.count)
        guard contexts.count == tokens.count else {
            let e = LeapError.invalidArgument("decodeStep: \(contexts.count) contexts but \(tokens.count) tokens")
            return errors.map { _ in e }
        }
        var members: [Int] = []  // indices of the contexts that step
        for (i, c) in contexts.enumerated() {
            let t = tokens[i]
            if let first = members.first, !contexts[first].canBatch(with: c) {
                errors[i] = LeapError.invalidArgument("decodeStep: context \(i) has another model, pool or KV cache type than context \(first)")
            } else if members.contains(where: { contexts[$0] === c }) {
                errors[i] = LeapError.invalidArgument("decodeStep: context \(i) appears twice in one step")
            } else if t < 0 || Int(t) >= c.cfg.nVocab {
                errors[i] = LeapError.invalidArgument("token id \(t) is out of range 0..<\(c.cfg.nVocab)")
            } else if c.nPast >= c.contextSize {
                errors[i] = LeapError(.promptExceedsContext, "1 tokens do not fit in the context: \(c.nPast) of \(c.contextSize) positions are used")
            } else {
                members.append(i)
            }
        }
        if members.count == 1 {
            let i = members[0]
            do { try contexts[i].eval(tokens: [tokens[i]]) } catch { errors[i] = error }
            return errors
        }
        guard let owner = members.first.map({ contexts[$0] }) else { return errors }
        let V = owner.cfg.outputWidth
        // Each member's logits buffer first (a failure leaves that member out), then the batch's rows.
        var stepping: [Int] = []
        var rows: [RawBuffer] = []
        for i in members {
            do {
                rows.append(try contexts[i].logitsStorage(rows: 1))
                stepping.append(i)
            } catch { errors[i] = error }
        }
        // The few-token kernels keep each token's one-token order in batches of 2-15 tokens (AVX2: Q4_0, Q8_0,
        // Q4_K, Q5_K, Q6_K; AVX-512 VNNI: Q4_0, Q8_0, Q6_K), so with those weights each member gets the logits
        // it gets alone, bit for bit (VNNI's Q4_K / Q5_K take the gemm tiles from 4 tokens, another order:
        // the last bits differ).
        let batchLogits: RawBuffer
        do {
            batchLogits = try owner.stepLogitsStorage(rows: stepping.count)
        } catch {
            for i in stepping { errors[i] = error }
            return errors
        }
        let spans = stepping.enumerated().map { r, i in
            SequenceSpan(context: contexts[i], firstRow: r, count: 1, pos0: contexts[i].nPast)
        }
        let ids = stepping.map { tokens[$0] }
        let out = batchLogits.floats()
        owner.pool.exclusive {
            ids.withUnsafeBufferPointer { owner.forward(.tokens($0), count: ids.count, spans: spans, logitsFrom: 0, into: out) }
        }
        for (r, i) in stepping.enumerated() {
            rows[r].floats().update(from: out + r * V, count: V)
            contexts[i].acceptStep(token: tokens[i])
        }
        return errors
    }

    /// The [rows, V] buffer a decode batch run on this context's scratch writes its logits to (kept for the
    /// next batch; it has at most one row per batched conversation).
    private func stepLogitsStorage(rows: Int) throws -> RawBuffer {
        let needed = try checkedSize(rows, cfg.outputWidth, 4, what: "logits")
        if let b = stepLogits, b.byteCount >= needed { return b }
        stepLogits = nil
        let b = try RawBuffer(bytes: needed, what: "the logits of a decode batch")
        stepLogits = b
        return b
    }
}
