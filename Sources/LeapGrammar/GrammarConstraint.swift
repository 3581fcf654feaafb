// What the runtime holds during one constrained generation: a matcher, the vocabulary index and a
// reusable mask. Per generated token:
//
//   constraint.maskLogits(logits)          // disallowed tokens → -inf, before sampling
//   constraint.accept(token: sampled)      // false only if the sampler ignored the mask
//   if constraint.isComplete { stop }      // the JSON value is finished (finish reason CONSTRAINT/STOP)
//
// End-of-generation tokens are allowed whenever the value could end (`canEnd`), e.g. after the digits
// of a top-level number, which may also continue; after a closing brace the value is complete and
// nothing but end-of-generation is allowed.

package final class GrammarConstraint {
    package let index: TokenVocabularyIndex
    package let matcher: GrammarMatcher
    package private(set) var mask: TokenMask

    package init(grammar: Grammar, index: TokenVocabularyIndex) {
        self.index = index
        matcher = grammar.makeMatcher()
        mask = TokenMask(vocabularySize: index.vocabularySize)
    }

    /// Computes the mask for the current state (also available afterwards as `mask`).
    @discardableResult
    package func updateMask() -> TokenMask {
        index.fillMask(for: matcher, into: &mask)
        return mask
    }

    /// Sets the logits of the tokens the grammar does not allow next to -infinity. `logits` covers the
    /// model's vocabulary (entries beyond the index's vocabulary are disallowed too).
    package func maskLogits(_ logits: UnsafeMutableBufferPointer<Float>) {
        updateMask()
        mask.apply(to: logits)
    }

    /// Whether `id` is allowed now (no mask computed, state unchanged).
    package func allows(token id: Int) -> Bool { index.allows(id, matcher: matcher) }

    /// Advances by a sampled token; false (state unchanged) if the grammar does not allow it.
    @discardableResult
    package func accept(token id: Int) -> Bool { index.acceptToken(id, matcher: matcher) }

    /// The value is finished: nothing but end-of-generation may follow.
    package var isComplete: Bool { matcher.isComplete }
    /// The value could end here (end-of-generation tokens are allowed).
    package var canEnd: Bool { matcher.canEnd }

    /// Bytes that would finish the value the shortest way (e.g. to close a document cut by max tokens).
    package func shortestCompletion() -> [UInt8] { matcher.shortestCompletion() }

    package func reset() { matcher.reset() }
}
