import LeapCore

/// Speculative decoding for a caller's own verification loop (the low-level evaluation API): drafts the
/// tokens that follow a history, as many as the adaptive control judges worth verifying (the generation
/// loop's `DraftPlan`: acceptance per evidence level, the measured cost of a pass), and learns from how
/// many of them the caller accepted.
///
/// The caller evaluates [last token] + guesses keeping every position's logits, samples the positions in
/// order and accepts a guess while the token sampled is that guess (Drafting.swift: the output is then
/// one-token decoding's), rewinds the rejected rest and reports the count (`accepted`). Timing: a pass
/// lasts from the `draft` call that made its guesses to `accepted`; a one-token step from a `draft` call
/// that made none to the next call, when that call's history is one token longer. Both include the
/// caller's work and any wait for the cores, so a pass is weighed against this speculator's own steps.
package final class Speculator {
    private var plan: DraftPlan
    private let runner: ModelRunner
    private let vocabularySize: Int
    /// The most positions the draft model's context holds (nil for a drafter without a context).
    package let draftContextSize: Int?
    /// The history of the last `draft` call, and how many of its first tokens began its sequence.
    private var history: [Int32] = []
    private var sequenceStart = 0
    /// The guesses of the last `draft` call not reported yet, their evidence and when the call began.
    private var pass: (guesses: Int, evidence: Int, started: Double)?
    /// When the last `draft` call began, if it made no guesses (a one-token step follows).
    private var stepStarted: Double?
    /// Seconds of this speculator's own one-token steps (decayed average), nil before one was timed.
    private var ownStepSeconds: Double?

    /// The drafter `choice` names (nil: the model's draft model when it was loaded with one, else prompt
    /// lookup) drafting at most `maxDraft` tokens a pass (nil: 8); a draft model follows the history in a
    /// context of `contextSize` positions (nil: the model's context size).
    package init(runner: ModelRunner, drafter choice: DrafterChoice?, maxDraft: Int?, contextSize: Int?) throws {
        guard runner.speech == nil else {
            throw LeapError(.unsupported, "a model that speaks does not speculate: its audio frames are not drafted")
        }
        let limit = GenerationOptions.draftTokensLimit
        let maxDraft = maxDraft ?? 8
        guard (1...limit).contains(maxDraft) else {
            throw LeapError(.invalidArgument, "maximum draft length must be in 1...\(limit) (one verification pass takes the last token and its guesses), got \(maxDraft)")
        }
        if let n = contextSize, n <= 0 {
            throw LeapError(.invalidArgument, "the draft model's context size must be > 0, got \(n)")
        }
        let drafter: any TokenDrafter
        switch choice ?? (runner.draftModel == nil ? .ngram : .draftModel) {
        case .none:
            throw LeapError(.invalidArgument, "a speculator needs a drafter (prompt lookup or the draft model), not none")
        case .ngram:
            drafter = NGramDrafter()
            draftContextSize = nil
        case .custom(let make):
            drafter = make()
            draftContextSize = nil
        case .draftModel:
            guard let draft = runner.draftModel else {
                throw LeapError(.invalidArgument, "speculative decoding with a draft model: the model was loaded without one")
            }
            let n = contextSize ?? runner.contextSize
            drafter = try draft.makeDrafter(contextSize: n)
            draftContextSize = n
        }
        self.runner = runner
        self.vocabularySize = runner.tokenizer.vocabularySize
        self.plan = DraftPlan(drafter: drafter, maxDraft: maxDraft, runner: runner)
    }

    /// The most tokens a pass drafts.
    package var maxDraft: Int { plan.control.maxDraft }

    /// Guesses (at most `limit`, none when drafting does not pay now) for the tokens after `history`, the
    /// sequence so far (prompt and generated tokens). A history that continues the last call's learns from
    /// the tokens it added; another one starts a new sequence. Throws, changing nothing, for an empty history,
    /// a token outside the vocabulary or a negative limit.
    package func draft(after newHistory: [Int32], limit: Int) throws -> [Int32] {
        guard !newHistory.isEmpty else { throw LeapError(.invalidArgument, "the history is empty: drafting needs at least its last token") }
        guard limit >= 0 else { throw LeapError(.invalidArgument, "the most guesses must not be negative, got \(limit)") }
        for (i, t) in newHistory.enumerated() where t < 0 || Int(t) >= vocabularySize {
            throw LeapError(.invalidArgument, "history token \(t) at index \(i) is out of range 0..<\(vocabularySize)")
        }
        let t0 = monotonicSeconds()
        learn(from: newHistory, at: t0)
        var room = min(limit, plan.control.maxDraft)
        if let n = draftContextSize { room = min(room, max(0, n - newHistory.count)) }
        let (guesses, evidence) = plan.guesses(after: newHistory, generated: newHistory.count - sequenceStart, room: room)
        history = newHistory
        pass = guesses.isEmpty ? nil : (guesses.count, evidence, t0)
        stepStarted = guesses.isEmpty ? t0 : nil
        return guesses
    }

    /// `taken` of the last `draft` call's guesses were accepted (they are its first `taken`): the control
    /// learns the acceptance and the pass's cost. Throws, changing nothing, when there are no guesses to
    /// report or `taken` is more than they were.
    package func accepted(_ taken: Int) throws {
        guard let pass else {
            throw LeapError(.invalidArgument, "no guesses to report: the last draft made none, or they were reported already")
        }
        guard (0...pass.guesses).contains(taken) else {
            throw LeapError(.invalidArgument, "\(taken) guesses accepted of the \(pass.guesses) the last draft made")
        }
        // A pass is weighed against this loop's own steps, which share its conditions (other work on the
        // cores and the model's thread pool, the caller's work per token), then stated in the model's step
        // time, which the control keeps across loops and conversations. Before a step of its own was timed,
        // only the acceptance is learned.
        let stepSeconds = plan.control.cost.stepSeconds
        if let own = ownStepSeconds, stepSeconds > 0 {
            let seconds = (monotonicSeconds() - pass.started) * stepSeconds / own
            plan.control.record(drafted: pass.guesses, taken: taken, seconds: seconds, evidence: pass.evidence)
        } else {
            plan.control.observe(drafted: pass.guesses, taken: taken, evidence: pass.evidence)
        }
        runner.rememberDrafting(plan.control.memory, for: plan.drafter)
        self.pass = nil
    }

    /// What the tokens added since the last call teach: a one-token step's cost, the watched free guesses.
    /// A history that does not continue the last one starts a new sequence (a pass not reported is dropped).
    private func learn(from newHistory: [Int32], at now: Double) {
        let continues = !history.isEmpty && newHistory.count > history.count && newHistory.starts(with: history)
        guard continues else {
            plan.forgetWatched()
            sequenceStart = newHistory.count
            (pass, stepStarted) = (nil, nil)
            return
        }
        if let started = stepStarted, newHistory.count == history.count + 1 {
            plan.control.recordStep(seconds: now - started)
            runner.rememberDrafting(plan.control.memory, for: plan.drafter)
            ownStepSeconds = ownStepSeconds.map { 0.7 * $0 + 0.3 * (now - started) } ?? (now - started)
        }
        for t in newHistory[history.count...] { plan.watch(t) }
    }
}
