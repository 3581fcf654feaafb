// The draft-length controller: it drafts where verification pays and pauses where it does not, alone and
// with other conversations sharing the passes (their tokens are slowed by the extra rows too).
import LeapRuntime
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
        #expect(control.acceptanceRate > 0.9)
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
        #expect(alone.acceptanceRate == shared.acceptanceRate)
        #expect(alone.nextDraftLength() > 0)
        #expect(shared.nextDraftLength() == 0)
    }

    @Test func sharedPassesStillDraftWhenRowsAreNearlyFree() {
        // A memory-bound pass: 4 more rows cost 4% of a step; sharing or not, drafting pays.
        var shared = trained(passCost: 1.04, sequences: 4)
        #expect(shared.nextDraftLength() > 0)
    }
}
