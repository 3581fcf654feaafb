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
    /// The guesses `draft` makes and the evidence behind them, on the drafter's own scale from 0 (none
    /// said) to `DraftController.evidenceLevels - 1`: guesses of one evidence level share an acceptance
    /// rate, so that strongly backed guesses are drafted far and weakly backed ones little or not at all.
    func draftWithEvidence(after history: [Int32], generated: Int, count: Int) -> (guesses: [Int32], evidence: Int)
    /// True when a guess costs next to nothing (a lookup, no model): the generation then asks for guesses
    /// at every step, before it decides how many to verify, and checks those it does not verify against
    /// the tokens it samples, so the acceptance rates are known without paying for verification passes.
    var guessesAreFree: Bool { get }
}

extension TokenDrafter {
    package var guessesAreFree: Bool { false }
    package func draftWithEvidence(after history: [Int32], generated: Int, count: Int) -> (guesses: [Int32], evidence: Int) {
        (draft(after: history, generated: generated, count: count), 0)
    }
}

/// Prompt lookup (n-gram) drafting: the tokens that followed the most recent earlier occurrence of the
/// longest suffix of the sequence found again (at most `maxNgram` tokens long, at least `minNgram`). No
/// second model: it pays where the output copies from the prompt or from itself (summaries, extraction,
/// edits of given text or code). The evidence is the length of that match: a continuation after six
/// tokens seen before is taken far more often than one after a single token.
package final class NGramDrafter: TokenDrafter {
    package let maxNgram: Int
    package let minNgram: Int

    package var guessesAreFree: Bool { true }

    package init(maxNgram: Int = DraftController.evidenceLevels - 1, minNgram: Int = 1) {
        self.maxNgram = max(1, maxNgram)
        self.minNgram = max(1, min(minNgram, self.maxNgram))
    }

    package func draft(after history: [Int32], generated: Int, count: Int) -> [Int32] {
        draftWithEvidence(after: history, generated: generated, count: count).guesses
    }

    package func draftWithEvidence(after history: [Int32], generated: Int, count: Int) -> (guesses: [Int32], evidence: Int) {
        let h = history.count
        guard count > 0, h >= 2 else { return ([], 0) }
        let longest = min(maxNgram, h - 1)
        // One pass back over the earlier positions `end`: how many of the tokens just before `end` equal
        // the sequence's last ones (the most recent of the longest matches wins: it is found first).
        var bestEnd = -1, bestLength = minNgram - 1
        history.withUnsafeBufferPointer { t in
            var end = h - 1   // exclusive end of a candidate occurrence; the tokens from `end` on follow it
            while end >= 1 && bestLength < longest {
                var n = 0
                while n < longest && n < end && t[end - 1 - n] == t[h - 1 - n] { n += 1 }
                if n > bestLength { (bestEnd, bestLength) = (end, n) }
                end -= 1
            }
        }
        guard bestEnd >= 0 else { return ([], 0) }
        return (Array(history[bestEnd..<min(h, bestEnd + count)]), bestLength)
    }
}

/// How many tokens to draft: the acceptance rate of guesses like these and the measured cost of a
/// verification pass decide, and drafting pauses where it does not pay.
///
/// With a per-token acceptance rate a, a pass of k drafts yields E(k) = (1 - a^(k+1)) / (1 - a) tokens
/// (the accepted prefix and the token sampled after it) for the cost of one pass, c(k) = 1 + β·k in
/// one-token steps (β from the timings of the passes run so far). When n conversations share the passes
/// (stepped together), the k extra rows slow the other n - 1 as much as this one, which gain nothing from
/// them: the pass yields n - 1 + E(k) tokens for c(k), against n for 1, so the gain weighed is
/// (n - 1 + E(k)) / (n·c(k)), which is E(k) / c(k) for a conversation alone. The draft length is the
/// k <= maxDraft with the best gain; when even that is below `minGain` it drafts nothing. The rate a is
/// kept per evidence level of the guesses (`TokenDrafter.draftWithEvidence`). A drafter whose guesses are
/// free keeps being asked at those steps and its guesses are checked against the tokens sampled
/// (`observe`), so the rates stay current at no cost. Any other drafting pauses for `pauseTokens` tokens
/// and then probes again with a real pass (the prompt may start copying text, the others may finish).
package struct DraftController: Sendable {
    /// Evidence levels a drafter may report, 0 to evidenceLevels - 1 (higher ones count as the last).
    package static let evidenceLevels = 7

    /// What a pass costs on this model and machine: seconds of a one-token step, and β, the extra cost of
    /// one more token in a pass, in one-token steps. Learned from the timings of the passes.
    package struct PassCost: Sendable, Equatable {
        package var stepSeconds: Double
        package var beta: Double
        package init(stepSeconds: Double = 0, beta: Double = 0.15) {
            self.stepSeconds = stepSeconds
            self.beta = beta
        }
    }

    /// Decayed counts of accepted and rejected draft positions of one evidence level (a rejection ends a
    /// pass's observations); their prior is a rate of 2/3.
    package struct Acceptance: Sendable, Equatable {
        package var accepted = 2.0
        package var rejected = 1.0
        package init() {}
        package var rate: Double { accepted / (accepted + rejected) }
        mutating func observe(drafted: Int, taken: Int) {
            let decay = 0.9
            accepted = accepted * decay + Double(taken)
            rejected = rejected * decay + (taken < drafted ? 1 : 0)
        }
    }

    /// What the controller has learned that holds beyond one generation: the pass cost and the acceptance
    /// per evidence level. The model carries it from one generation to the next (`ModelRunner.drafting`),
    /// so that a new generation starts from what the last ones measured instead of probing from a prior.
    package struct Memory: Sendable, Equatable {
        package var cost: PassCost
        package var acceptance: [Acceptance]
        package init(cost: PassCost = PassCost(), acceptance: [Acceptance] = []) {
            self.cost = cost
            self.acceptance = acceptance.count == DraftController.evidenceLevels
                ? acceptance : Array(repeating: Acceptance(), count: DraftController.evidenceLevels)
        }
    }

    package let maxDraft: Int
    /// Expected speed-up below which drafting pauses.
    package var minGain = 1.05
    package var pauseTokens = 32
    package private(set) var memory: Memory
    /// The pass cost measured so far (its prior, or the model's last generations', until passes are timed).
    package var cost: PassCost { memory.cost }
    /// Conversations sharing the passes, this one included (decayed average of the last passes).
    private var sequences = 1.0
    private var paused = 0

    /// The rate is observed at the steps without drafts (the drafter's guesses are free): no pauses.
    package let observesWithoutPasses: Bool

    package init(maxDraft: Int, memory: Memory = Memory(), observesWithoutPasses: Bool = false) {
        self.maxDraft = max(0, maxDraft)
        self.memory = memory
        self.observesWithoutPasses = observesWithoutPasses
    }

    package init(maxDraft: Int, cost: PassCost, observesWithoutPasses: Bool = false) {
        self.init(maxDraft: maxDraft, memory: Memory(cost: cost), observesWithoutPasses: observesWithoutPasses)
    }

    private static func level(_ evidence: Int) -> Int { min(max(0, evidence), evidenceLevels - 1) }

    /// The acceptance rate the controller works with for guesses of this evidence.
    package func acceptanceRate(evidence: Int = 0) -> Double { memory.acceptance[Self.level(evidence)].rate }

    /// The draft length for the next step's guesses of this evidence (0 = evaluate one token).
    package mutating func nextDraftLength(evidence: Int = 0) -> Int {
        if paused > 0 {
            paused -= 1
            return 0
        }
        guard maxDraft > 0 else { return 0 }
        let a = min(acceptanceRate(evidence: evidence), 0.999)
        let n = sequences
        var best = 0, bestGain = 1.0
        var ak = a   // a^(k)
        for k in 1...maxDraft {
            ak *= a
            let tokens = (1 - ak) / (1 - a)   // E(k)
            let gain = (n - 1 + tokens) / (n * (1 + memory.cost.beta * Double(k)))
            if gain > bestGain { (best, bestGain) = (k, gain) }
        }
        if bestGain < minGain {
            if observesWithoutPasses { return 0 }
            paused = pauseTokens
            // Probe later with a rate halfway back to the prior, so that one bad stretch is not final.
            let level = Self.level(evidence)
            memory.acceptance[level].accepted = (memory.acceptance[level].accepted + 2) / 2
            memory.acceptance[level].rejected = (memory.acceptance[level].rejected + 1) / 2
            return 0
        }
        return best
    }

    /// A pass verified `drafted` tokens of this evidence and `taken` of them were accepted, in `seconds`,
    /// shared by `sequences` conversations.
    package mutating func record(drafted: Int, taken: Int, seconds: Double, sequences: Int = 1, evidence: Int = 0) {
        guard drafted > 0 else { return }
        recordSharing(sequences)
        observe(drafted: drafted, taken: taken, evidence: evidence)
        if memory.cost.stepSeconds > 0 && seconds > 0 {
            let extra = (seconds / memory.cost.stepSeconds - 1) / Double(drafted)
            memory.cost.beta = 0.8 * memory.cost.beta + 0.2 * min(2, max(0.01, extra))
        }
    }

    /// Guesses of this evidence made without a pass: `taken` of the `drafted` were the tokens then
    /// sampled, in order.
    package mutating func observe(drafted: Int, taken: Int, evidence: Int = 0) {
        guard drafted > 0 else { return }
        memory.acceptance[Self.level(evidence)].observe(drafted: drafted, taken: taken)
    }

    /// A one-token step took `seconds`, in a pass shared by `sequences` conversations.
    package mutating func recordStep(seconds: Double, sequences: Int = 1) {
        guard seconds > 0 else { return }
        recordSharing(sequences)
        let step = memory.cost.stepSeconds
        memory.cost.stepSeconds = step == 0 ? seconds : 0.8 * step + 0.2 * seconds
    }

    private mutating func recordSharing(_ n: Int) {
        self.sequences = 0.8 * self.sequences + 0.2 * Double(max(1, n))
    }
}
