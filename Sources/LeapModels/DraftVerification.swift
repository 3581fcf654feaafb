// Verification of drafted tokens (speculative decoding): the last accepted token and k drafted ones are
// evaluated in one forward pass, with the logits of every position kept; the caller accepts a prefix and
// rewinds the rest.
//
// The pass is a span of this context in the multi-sequence forward (MultiSequenceDecodeStep.swift): each
// row is its own one-row span (positions nPast, nPast+1, ...), so the matmuls read every weight once for all
// rows while attention and the short convolution of each row run exactly as a one-token decode does. With
// the few-token matmul kernels every row's logits are bit for bit those of evaluating the tokens one at a
// time. The same span can share a pass with the spans of other conversations (DecodeBatcher.step).
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
        if let error = Self.decodeStep([self], spans: [tokens])[0] { throw error }
    }
}
