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
        #expect(watching.acceptanceRate > 0.9)
        #expect(watching.nextDraftLength() > 0)
        #expect(pausing.nextDraftLength() == 0)   // still paused
    }

    @Test func wrongWatchedGuessesKeepDraftingOff() {
        var watching = DraftController(maxDraft: 8, cost: .init(stepSeconds: 0.01, beta: 0.3), observesWithoutPasses: true)
        for _ in 0..<20 { watching.observe(drafted: 8, taken: 0) }
        #expect(watching.acceptanceRate < 0.1)
        #expect(watching.nextDraftLength() == 0)
    }
}
