// The draft-length controller: it drafts where verification pays and pauses where it does not, alone and
// with other conversations sharing the passes (their tokens are slowed by the extra rows too).
import LeapRuntime
import LeapTestFiles
import Testing

@Suite struct DraftControllerTests {
    /// A controller after `passes` verification passes of 4 drafts, all taken, each costing `passCost`
    /// one-token steps, in passes shared by `sequences` conversations.
    private func trained(passCost: Double, sequences: Int, passes: Int = 20) -> DraftController {
        var control = DraftController(maxDraft: 8)
        for _ in 0..<passes {
            control.recordStep(seconds: 0.010, sequences: sequences)
            control.record(drafted: 4, taken: 4, seconds: 0.010 * passCost, sequences: sequences)
        }
        return control
    }

    @Test func draftsWhenPassesAreCheapAndGuessesRight() {
        var control = trained(passCost: 1.2, sequences: 1)
        #expect(control.acceptanceRate() > 0.9)
        #expect(control.nextDraftLength() == 8)
    }

    @Test func pausesWhenAPassCostsAsMuchAsItsTokens() {
        // Each extra row costs a whole step (β = 1): E(k) <= k + 1 = c(k), never a gain.
        var control = trained(passCost: 5, sequences: 1)
        #expect(control.nextDraftLength() == 0)
        // paused: the next steps evaluate one token without asking again
        #expect(control.nextDraftLength() == 0)
    }

    @Test func sharedPassesWeighTheOthersTokens() {
        // The same acceptance and β = 0.25 (a 4-draft pass costs 2 steps): alone, 8 drafts yield about
        // 9 tokens for 3 steps; with 3 other conversations in the pass they yield 3 + 9 tokens for 3 steps
        // against 4 tokens for 1 step, a loss.
        var alone = trained(passCost: 2, sequences: 1)
        var shared = trained(passCost: 2, sequences: 4)
        #expect(alone.acceptanceRate() == shared.acceptanceRate())
        #expect(alone.nextDraftLength() > 0)
        #expect(shared.nextDraftLength() == 0)
    }

    @Test func sharedPassesStillDraftWhenRowsAreNearlyFree() {
        // A memory-bound pass: 4 more rows cost 4% of a step; sharing or not, drafting pays.
        var shared = trained(passCost: 1.04, sequences: 4)
        #expect(shared.nextDraftLength() > 0)
    }

    @Test func aLearnedPassCostDecidesFromTheFirstStep() {
        // A model whose 4-token passes were measured at 5 steps: a new generation does not draft at all,
        // where one starting from the prior (a pass of 4 drafts at 1.6 steps) drafts at once.
        var learned = DraftController(maxDraft: 8, cost: .init(stepSeconds: 0.01, beta: 1))
        #expect(learned.nextDraftLength() == 0)
        var fresh = DraftController(maxDraft: 8)
        #expect(fresh.nextDraftLength() > 0)
    }

    @Test func freeGuessesAreWatchedInsteadOfPausing() {
        // Passes cost β = 0.7: at the prior rate nothing pays. A controller that must pause does not ask
        // again for pauseTokens steps, whatever the guesses would have done; one whose guesses are free
        // drafts as soon as the watched guesses turn out right.
        let cost = DraftController.PassCost(stepSeconds: 0.01, beta: 0.7)
        var pausing = DraftController(maxDraft: 8, cost: cost)
        var watching = DraftController(maxDraft: 8, cost: cost, observesWithoutPasses: true)
        #expect(pausing.nextDraftLength() == 0)
        #expect(watching.nextDraftLength() == 0)
        for _ in 0..<6 {
            pausing.observe(drafted: 8, taken: 8)
            watching.observe(drafted: 8, taken: 8)
        }
        #expect(watching.acceptanceRate() > 0.9)
        #expect(watching.nextDraftLength() > 0)
        #expect(pausing.nextDraftLength() == 0)   // still paused
    }

    @Test func wrongWatchedGuessesKeepDraftingOff() {
        var watching = DraftController(maxDraft: 8, cost: .init(stepSeconds: 0.01, beta: 0.3), observesWithoutPasses: true)
        for _ in 0..<20 { watching.observe(drafted: 8, taken: 0) }
        #expect(watching.acceptanceRate() < 0.1)
        #expect(watching.nextDraftLength() == 0)
    }

    @Test func ratesAreKeptPerEvidenceLevel() {
        // Prompt lookup's guesses after a long match are right, after a one-token match wrong: the
        // controller drafts far after the first and not at all after the second, from the same passes.
        var control = DraftController(maxDraft: 8, cost: .init(stepSeconds: 0.01, beta: 0.3), observesWithoutPasses: true)
        for _ in 0..<20 {
            control.observe(drafted: 8, taken: 8, evidence: 6)
            control.observe(drafted: 8, taken: 0, evidence: 1)
        }
        #expect(control.acceptanceRate(evidence: 6) > 0.9)
        #expect(control.acceptanceRate(evidence: 1) < 0.1)
        #expect(control.acceptanceRate(evidence: 3) == DraftController.Acceptance().rate, "unobserved: the prior")
        #expect(control.nextDraftLength(evidence: 6) == 8)
        #expect(control.nextDraftLength(evidence: 1) == 0)
        // Levels past the last count as the last.
        #expect(control.acceptanceRate(evidence: 60) == control.acceptanceRate(evidence: 6))
    }
}

@Suite struct NGramDrafterTests {
    /// The definition, searched the obvious way: for n from the longest down, the most recent earlier
    /// occurrence of the last n tokens, and what followed it.
    private func expected(_ h: [Int32], count: Int, maxNgram: Int, minNgram: Int) -> (guesses: [Int32], evidence: Int) {
        guard h.count >= 2 else { return ([], 0) }
        for n in stride(from: min(maxNgram, h.count - 1), through: minNgram, by: -1) {
            for end in stride(from: h.count - 1, through: n, by: -1) where Array(h[(end - n)..<end]) == Array(h[(h.count - n)...]) {
                return (Array(h[end..<min(h.count, end + count)]), n)
            }
        }
        return ([], 0)
    }

    @Test func continuesTheMostRecentLongestMatch() {
        let d = NGramDrafter(maxNgram: 3)
        let h: [Int32] = [5, 1, 2, 3, 9, 7, 2, 3, 8, 1, 2, 3]
        // "1 2 3" occurs at 1..3 (followed by 9 7 ...); "2 3" also at 6..7, more recent but shorter.
        let (guesses, evidence) = d.draftWithEvidence(after: h, generated: 0, count: 4)
        #expect(guesses == [9, 7, 2, 3])
        #expect(evidence == 3)
        #expect(d.draft(after: h, generated: 0, count: 2) == [9, 7])
        #expect(d.draftWithEvidence(after: [4, 6, 7], generated: 0, count: 4).guesses.isEmpty, "nothing repeats")
        #expect(NGramDrafter(maxNgram: 3, minNgram: 2).draft(after: [1, 2, 3, 4, 2], generated: 0, count: 4).isEmpty,
                "a one-token match is below minNgram")
    }

    @Test func agreesWithTheDefinitionOnRandomSequences() {
        // A small alphabet makes matches of every length, repeats and overlaps.
        var rng = SplitMix64(seed: 40)
        for trial in 0..<2000 {
            let length = Int(rng.next() % 40)
            let alphabet = UInt64(2 + trial % 4)
            let h = (0..<length).map { _ in Int32(rng.next() % alphabet) }
            let maxNgram = 1 + trial % 6, minNgram = 1 + (trial / 6) % maxNgram
            let count = 1 + trial % 8
            let got = NGramDrafter(maxNgram: maxNgram, minNgram: minNgram).draftWithEvidence(after: h, generated: 0, count: count)
            let want = expected(h, count: count, maxNgram: maxNgram, minNgram: minNgram)
            #expect(got.guesses == want.guesses && got.evidence == want.evidence, "\(h) max \(maxNgram) min \(minNgram)")
        }
    }
}
