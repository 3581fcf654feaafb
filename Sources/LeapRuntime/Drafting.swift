// Drafters for speculative decoding, and the control of how much to draft.
//
// A drafter guesses the next tokens from the sequence so far; the model checks the guesses in one
// verification pass (InferenceSessionBackend.verify) and the generation loop takes each guess only where
// the token it samples anyway is that guess. Drafters here are deterministic: their proposal distribution
// q is a point mass on the guess, for which the speculative-sampling rule (accept with min(1, p/q), else
// resample from the normalised max(0, p - q)) is exactly "draw from p; accept while the draw equals the
// guess": P(guess) = p(guess), P(x != guess) = (1 - p(guess)) · p(x) / (1 - p(guess)) = p(x). So every
// token is drawn from the distribution the sampler uses without speculation — penalties, the JSON-schema
// mask, temperature and filters included — with the same random draws: output does not change.

/// Guesses up to `count` tokens that follow `history`: the prompt's tokens, then the `generated` ones.
package protocol TokenDrafter: AnyObject {
    func draft(after history: [Int32], generated: Int, count: Int) -> [Int32]
    /// True when a guess costs next to nothing (a lookup, no model): the generation then also asks for
    /// guesses at the steps it drafts nothing and checks them against the tokens it samples, so the
    /// acceptance rate is known without paying for verification passes.
    var guessesAreFree: Bool { get }
}

extension TokenDrafter {
    package var guessesAreFree: Bool { false }
}

/// Prompt lookup (n-gram) drafting: the most recent earlier occurrence of the sequence's last n tokens
/// (n from `maxNgram` down to `minNgram`), and the tokens that followed it. No second model: it pays where
/// the output copies from the prompt or from itself (summaries, extraction, edits of given text or code).
package final class NGramDrafter: TokenDrafter {
    package let maxNgram: Int
    package let minNgram: Int

    package var guessesAreFree: Bool { true }

    package init(maxNgram: Int = 3, minNgram: Int = 1) {
        self.maxNgram = max(1, maxNgram)
        self.minNgram = max(1, min(minNgram, self.maxNgram))
    }

    package func draft(after history: [Int32], generated: Int, count: Int) -> [Int32] {
        let h = history.count
        guard count > 0 else { return [] }
        var n = min(maxNgram, h - 1)
        while n >= minNgram {
            // Occurrences of history[h-n..<h] ending before h, most recent first.
            var end = h - 1   // exclusive end of a candidate occurrence
            while end >= n {
                var match = true
                for j in 0..<n where history[end - n + j] != history[h - n + j] { match = false; break }
                if match {
                    let follow = history[end..<min(h, end + count)]
                    if !follow.isEmpty { return Array(follow) }
                }
                end -= 1
            }
            n -= 1
        }
        return []
    }
}

/// How many tokens to draft: the recent acceptance rate and the measured cost of a verification pass
/// decide, and drafting pauses where it does not pay.
///
/// With a per-token acceptance rate a, a pass of k drafts yields E(k) = (1 - a^(k+1)) / (1 - a) tokens
/// (the accepted prefix and the token sampled after it) for the cost of one pass, c(k) = 1 + β·k in
/// one-token steps (β from the timings of the passes run so far). When n conversations share the passes
/// (stepped together), the k extra rows slow the other n - 1 as much as this one, which gain nothing from
/// them: the pass yields n - 1 + E(k) tokens for c(k), against n for 1, so the gain weighed is
/// (n - 1 + E(k)) / (n·c(k)), which is E(k) / c(k) for a conversation alone. The draft length is the
/// k <= maxDraft with the best gain; when even that is below `minGain` it drafts nothing. A drafter whose
/// guesses are free keeps being asked at those steps and its guesses are checked against the tokens sampled
/// (`observe`), so the rate stays current at no cost. Any other drafting pauses for `pauseTokens` tokens and
/// then probes again with a real pass (the prompt may start copying text, the others may finish).
package struct DraftController: Sendable {
    /// What a pass costs on this model and machine: seconds of a one-token step, and β, the extra cost of
    /// one more token in a pass, in one-token steps. Learned from the timings of the passes, and carried
    /// from one generation to the next by the model (`ModelRunner.passCost`), so that a new generation
    /// starts from what the last ones measured instead of probing from a prior.
    package struct PassCost: Sendable, Equatable {
        package var stepSeconds: Double
        package var beta: Double
        package init(stepSeconds: Double = 0, beta: Double = 0.15) {
            self.stepSeconds = stepSeconds
            self.beta = beta
        }
    }

    package let maxDraft: Int
    /// Expected speed-up below which drafting pauses.
    package var minGain = 1.05
    package var pauseTokens = 32
    /// Decayed counts of accepted and rejected draft positions (a rejection ends a pass's observations).
    private var accepted = 2.0
    private var rejected = 1.0
    /// The pass cost measured so far (its prior, or the model's last generations', until passes are timed).
    package private(set) var cost: PassCost
    /// Conversations sharing the passes, this one included (decayed average of the last passes).
    private var sequences = 1.0
    private var paused = 0

    /// The rate is observed at the steps without drafts (the drafter's guesses are free): no pauses.
    package let observesWithoutPasses: Bool

    package init(maxDraft: Int, cost: PassCost = PassCost(), observesWithoutPasses: Bool = false) {
        self.maxDraft = max(0, maxDraft)
        self.cost = cost
        self.observesWithoutPasses = observesWithoutPasses
    }

    /// The acceptance rate the controller works with.
    package var acceptanceRate: Double { accepted / (accepted + rejected) }

    /// The draft length for the next step (0 = evaluate one token).
    package mutating func nextDraftLength() -> Int {
        if paused > 0 {
            paused -= 1
            return 0
        }
        guard maxDraft > 0 else { return 0 }
        let a = min(acceptanceRate, 0.999)
        let n = sequences
        var best = 0, bestGain = 1.0
        var ak = a   // a^(k)
        for k in 1...maxDraft {
            ak *= a
            let tokens = (1 - ak) / (1 - a)   // E(k)
            let gain = (n - 1 + tokens) / (n * (1 + cost.beta * Double(k)))
            if gain > bestGain { (best, bestGain) = (k, gain) }
        }
        if bestGain < minGain {
            if observesWithoutPasses { return 0 }
            paused = pauseTokens
            // Probe later with a rate halfway back to the prior, so that one bad stretch is not final.
            accepted = (accepted + 2) / 2
            rejected = (rejected + 1) / 2
            return 0
        }
        return best
    }

    /// A pass verified `drafted` tokens and `taken` of them were accepted, in `seconds`, shared by
    /// `sequences` conversations.
    package mutating func record(drafted: Int, taken: Int, seconds: Double, sequences: Int = 1) {
        guard drafted > 0 else { return }
        recordSharing(sequences)
        observe(drafted: drafted, taken: taken)
        if cost.stepSeconds > 0 && seconds > 0 {
            let extra = (seconds / cost.stepSeconds - 1) / Double(drafted)
            cost.beta = 0.8 * cost.beta + 0.2 * min(2, max(0.01, extra))
        }
    }

    /// Guesses made without a pass: `taken` of the `drafted` were the tokens then sampled, in order.
    package mutating func observe(drafted: Int, taken: Int) {
        guard drafted > 0 else { return }
        let decay = 0.9
        accepted = accepted * decay + Double(taken)
        rejected = rejected * decay + (taken < drafted ? 1 : 0)
    }

    /// A one-token step took `seconds`, in a pass shared by `sequences` conversations.
    package mutating func recordStep(seconds: Double, sequences: Int = 1) {
        guard seconds > 0 else { return }
        recordSharing(sequences)
        cost.stepSeconds = cost.stepSeconds == 0 ? seconds : 0.8 * cost.stepSeconds + 0.2 * seconds
    }

    private mutating func recordSharing(_ n: Int) {
        self.sequences = 0.8 * self.sequences + 0.2 * Double(max(1, n))
    }
}
