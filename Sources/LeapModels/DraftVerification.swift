// Verification of drafted tokens (speculative decoding): the last accepted token and k drafted ones are
// evaluated in one forward pass, with the logits of every position kept; the caller accepts a prefix and
// rewinds the rest.
//
// Each row of the pass is its own one-row span of this context (positions nPast, nPast+1, ...): the
// matmuls read every weight once for all rows, while attention and the short convolution of each row run
// exactly as a one-token decode does (attention stores every row's keys before any row attends, and a row
// sees only the keys up to its own position, sliding window included; the conv writes row i's gated input
// u before row i+1 reads it). With the few-token matmul kernels (which keep each token's one-token order)
// every row's logits are bit for bit those of evaluating the tokens one at a time.
//
// Rollback: `rewind(to:)`. The KV rows of rejected positions are simply overwritten later; the conv ring
// keeps u of the last maxBatch + convHistory positions, so the u of the accepted positions (all the
// state a short-conv layer needs to continue) are still there after the pass: a rewind by at most
// maxBatch positions is exact and free (InferenceContext.swift).
import LeapCore

extension InferenceContext {
    /// Most tokens one verification pass takes: the most the few-token kernels keep in one-token order.
    package static let maxVerifiedTokens = 15

    /// Evaluates `tokens` (the last accepted token, then the drafted ones) at positions nPast..<nPast+n in
    /// one forward pass and keeps the logits of every one (`logits(at: i)` is the distribution after
    /// tokens[0...i]). Throws (and changes nothing) when they don't fit, when a token is out of range, or
    /// for more than `min(maxBatch, maxVerifiedTokens)` tokens.
    package func evalDraft(tokens: [Int32]) throws {
        let n = tokens.count
        guard n > 0, n <= min(maxBatch, Self.maxVerifiedTokens) else {
            throw LeapError.invalidArgument("a verification pass takes 1...\(min(maxBatch, Self.maxVerifiedTokens)) tokens, not \(n)")
        }
        guard n <= contextSize - nPast else {
            throw LeapError(.promptExceedsContext, "\(n) tokens do not fit in the context: \(nPast) of \(contextSize) positions are used")
        }
        for (i, t) in tokens.enumerated() where t < 0 || Int(t) >= cfg.nVocab {
            throw LeapError.invalidArgument("token id \(t) at index \(i) is out of range 0..<\(cfg.nVocab)")
        }
        let logits = try logitsStorage(rows: n).floats()
        let spans = (0..<n).map { SequenceSpan(context: self, firstRow: $0, count: 1, pos0: nPast + $0) }
        pool.exclusive {
            tokens.withUnsafeBufferPointer { forward(.tokens($0), count: n, spans: spans, logitsFrom: 0, into: logits) }
        }
        nPast += n
        convValidFrom = max(convValidFrom, nPast - ringSize)
        inputs.append(contentsOf: tokens)
        lastBatchCount = n
        logitRowCount = n
        logitsFirstIndex = 0
    }
}
