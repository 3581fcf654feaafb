// One forward pass over token spans of several sequences: each sequence evaluates its span (one decoded
// token, or the last accepted token and the drafts after it) at its own next positions in its own KV cache
// and conv state, and all the rows go through the weights together (a matmul of n columns reads every weight
// once). Decode is memory-bound, so n rows cost little more than one.
//
// Every row is its own one-row span of its sequence (position nPast + i of its context): attention stores
// every row's keys before any row attends and a row sees only the keys up to its own position; the short
// conv writes row i's gated input before row i+1 of the same sequence reads it. With the few-token matmul
// kernels (up to 15 rows, each token's one-token order) every row's logits are bit for bit those of
// evaluating its sequence's tokens one at a time, whichever other rows share the pass.
import LeapCore
import LeapKernels

extension InferenceContext {
    /// Whether `other` can share a forward pass with this context: same model, pool and KV cache type.
    package func canBatch(with other: InferenceContext) -> Bool {
        model === other.model && pool === other.pool && kvCacheType == other.kvCacheType
    }

    /// Evaluates `tokens[i]` in `contexts[i]` at its next position, for every i, in one forward pass;
    /// afterwards each context holds its token's logits as after `eval(tokens:)`. See `decodeStep(_:spans:)`.
    package static func decodeStep(_ contexts: [InferenceContext], tokens: [Int32]) -> [(any Error)?] {
        decodeStep(contexts, spans: tokens.map { [$0] })
    }

    /// Evaluates `spans[i]` in `contexts[i]` at positions nPast..<nPast+n of that context, for every i, in
    /// one forward pass on the first stepping context's scratch; afterwards each context keeps the logits of
    /// every row of its span (`logits(at: j)` is the distribution after spans[i][0...j]), as after
    /// `evalDraft(tokens: spans[i])`. A span takes 1...min(maxBatch, maxVerifiedTokens) tokens, and all the
    /// spans together at most the scratch's maxBatch rows. Returns one result per context: nil, or the error
    /// that left that context out of the pass and unchanged (a token out of range, a span that does not fit
    /// in its context or in the pass, a context listed twice or that cannot batch with the first).
    package static func decodeStep(_ contexts: [InferenceContext], spans: [[Int32]]) -> [(any Error)?] {
        var errors = [(any Error)?](repeating: nil, count: contexts.count)
        guard contexts.count == spans.count else {
            let e = LeapError.invalidArgument("decodeStep: \(contexts.count) contexts but \(spans.count) spans")
            return errors.map { _ in e }
        }
        var members: [Int] = []  // indices of the contexts that step
        var totalRows = 0
        for (i, c) in contexts.enumerated() {
            let span = spans[i], n = span.count
            let spanLimit = min(c.maxBatch, maxVerifiedTokens)
            if let first = members.first, !contexts[first].canBatch(with: c) {
                errors[i] = LeapError.invalidArgument("decodeStep: context \(i) has another model, pool or KV cache type than context \(first)")
            } else if members.contains(where: { contexts[$0] === c }) {
                errors[i] = LeapError.invalidArgument("decodeStep: context \(i) appears twice in one step")
            } else if n < 1 || n > spanLimit {
                errors[i] = LeapError.invalidArgument("a verification pass takes 1...\(spanLimit) tokens, not \(n)")
            } else if let (j, t) = span.enumerated().first(where: { $0.element < 0 || Int($0.element) >= c.cfg.nVocab }) {
                errors[i] = LeapError.invalidArgument("token id \(t) at index \(j) is out of range 0..<\(c.cfg.nVocab)")
            } else if n > c.contextSize - c.nPast {
                errors[i] = LeapError(.promptExceedsContext, "\(n) tokens do not fit in the context: \(c.nPast) of \(c.contextSize) positions are used")
            } else if let first = members.first, totalRows + n > contexts[first].maxBatch {
                errors[i] = LeapError.invalidArgument("decodeStep: the span of context \(i) (\(n) tokens) does not fit in the pass: \(totalRows) of \(contexts[first].maxBatch) rows are taken")
            } else {
                members.append(i)
                totalRows += n
            }
        }
        guard let owner = members.first.map({ contexts[$0] }) else { return errors }
        let V = owner.cfg.outputWidth
        // Each member's logits buffer first (a failure leaves that member out), then the pass's rows.
        var stepping: [Int] = []
        var rows: [RawBuffer] = []
        for i in members {
            do {
                rows.append(try contexts[i].logitsStorage(rows: spans[i].count))
                stepping.append(i)
            } catch { errors[i] = error }
        }
        guard !stepping.isEmpty else { return errors }
        let T = stepping.reduce(0) { $0 + spans[$1].count }
        // A sequence alone writes its logits in place; a shared pass writes to the owner's step buffer and
        // copies each span's rows out. The few-token kernels keep each token's one-token order in batches of
        // 2-15 tokens (AVX2: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K; AVX-512 VNNI: Q4_0, Q4_1, Q5_0,
        // Q5_1, Q8_0, Q6_K, and Q4_K / Q5_K up to 7 tokens), so with those weights each row gets the logits it
        // gets alone, bit for bit (VNNI's Q4_K / Q5_K take the gemm tiles from 8 tokens, another order: the
        // last bits differ).
        let out: UnsafeMutablePointer<Float>
        if stepping.count == 1 {
            out = rows[0].floats()
        } else {
            do {
                out = try owner.stepLogitsStorage(rows: T).floats()
            } catch {
                for i in stepping { errors[i] = error }
                return errors
            }
        }
        var passSpans: [SequenceSpan] = []
        var ids: [Int32] = []
        for i in stepping {
            let c = contexts[i]
            for (j, t) in spans[i].enumerated() {
                passSpans.append(SequenceSpan(context: c, firstRow: ids.count, count: 1, pos0: c.nPast + j))
                ids.append(t)
            }
        }
        owner.pool.exclusive {
            ids.withUnsafeBufferPointer { owner.forward(.tokens($0), count: T, spans: passSpans, logitsFrom: 0, into: out) }
        }
        var row = 0
        for (r, i) in stepping.enumerated() {
            let n = spans[i].count
            if stepping.count > 1 { rows[r].floats().update(from: out + row * V, count: n * V) }
            contexts[i].acceptSpan(tokens: spans[i])
            row += n
        }
        return errors
    }

    /// The [rows, V] buffer a shared pass run on this context's scratch writes its logits to (kept for the
    /// next pass; it has at most one row per row of the pass).
    private func stepLogitsStorage(rows: Int) throws -> RawBuffer {
        let needed = try checkedSize(rows, cfg.outputWidth, 4, what: "logits")
        if let b = stepLogits, b.byteCount >= needed { return b }
        stepLogits = nil
        let b = try RawBuffer(bytes: needed, what: "the logits of a decode batch")
        stepLogits = b
        return b
    }
}
