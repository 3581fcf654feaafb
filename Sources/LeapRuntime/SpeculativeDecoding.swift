import LeapCore
import LeapModels

extension GenerationOptions {
    /// The most tokens `maxDraftTokens` may ask for: one verification pass takes the token and its drafts.
    package static let draftTokensLimit = InferenceContext.maxVerifiedTokens - 1
}

/// The speculative decoding of one generation: after each sampled token, the drafter's guesses for the
/// tokens after it are verified together with it in one pass (`InferenceSessionBackend.verify`); the
/// generation loop then samples every next token from the verified logits exactly as it would from a
/// one-token step, and a guess is taken only when it is the token sampled. The first token that differs
/// drops the remaining guesses (the session rewinds them) and starts the next pass. Drafting.swift says
/// why this leaves the output unchanged.
final class Speculation {
    var plan: DraftPlan
    /// The model, which keeps the measured pass cost for the next generations.
    private let runner: ModelRunner
    /// Guesses verified but not taken yet, next first.
    private(set) var pending: [Int32] = []
    /// The sequence's tokens (prompt and output) the drafter reads, and how many of them are output.
    private var history: [Int32]
    private var generated = 0
    /// The current pass: guesses verified, guesses taken, its seconds, the conversations that shared it, the
    /// guesses' evidence.
    private var pass = (drafted: 0, taken: 0, seconds: 0.0, sequences: 1, evidence: 0)

    init(drafter: any TokenDrafter, maxDraft: Int, prompt: [Int32], runner: ModelRunner) {
        self.runner = runner
        self.plan = DraftPlan(drafter: drafter, maxDraft: maxDraft, runner: runner)
        self.history = prompt
    }

    /// The speculation a generation with these options runs, or nil: none chosen, a backend that cannot
    /// verify, or a model that speaks (audio frames are never speculated).
    static func start(options: GenerationOptions, runner: ModelRunner, session: any InferenceSessionBackend,
                      prompt: [Int32], speaking: Bool) throws -> Speculation? {
        let drafter: any TokenDrafter
        switch options.drafter ?? (runner.draftModel == nil ? .none : .draftModel) {
        case .none: return nil
        case .ngram: drafter = NGramDrafter()
        case .custom(let make): drafter = make()
        case .draftModel:
            guard let draft = runner.draftModel else {
                throw LeapError(.invalidArgument, "speculative decoding with a draft model: the model was loaded without one")
            }
            drafter = try draft.makeDrafter(contextSize: session.contextSize)
        }
        if let k = options.maxDraftTokens, k < 0 {
            throw LeapError(.invalidArgument, "maximum draft length \(k) is negative")
        }
        let maxDraft = min(options.maxDraftTokens ?? 8, session.maxVerifiedTokens - 1)
        guard !speaking, maxDraft > 0 else { return nil }
        return Speculation(drafter: drafter, maxDraft: maxDraft, prompt: prompt, runner: runner)
    }

    /// Makes `token` (just sampled) part of the sequence: takes the verified guess when it is that token,
    /// else drops the guesses left and evaluates it, with new guesses after it when the control asks for
    /// some (at most `maxDrafts`: the completion tokens still allowed after it).
    func evaluate(_ token: Int32, in session: any InferenceSessionBackend, maxDrafts: Int, stats: inout GenerationStats) throws {
        history.append(token)
        generated += 1
        plan.watch(token)
        if let guess = pending.first {
            if guess == token {
                pending.removeFirst()
                pass.taken += 1
                stats.acceptedDraftTokens += 1
                try session.selectVerified(pass.taken)
                if pending.isEmpty { endPass() }
                return
            }
            try session.truncate(to: session.tokenCount - pending.count)
            pending = []
            endPass()
        }
        let room = min(maxDrafts, session.maxVerifiedTokens - 1, session.contextSize - session.tokenCount - 1)
        let t0 = monotonicSeconds()   // a pass's cost includes its drafting
        let (guesses, evidence) = plan.guesses(after: history, generated: generated, room: room)
        if guesses.isEmpty {
            try session.evaluate([token], shouldStop: { false })
            plan.control.recordStep(seconds: monotonicSeconds() - t0, sequences: session.lastPassSequences)
            runner.rememberDrafting(plan.control.memory, for: plan.drafter)
            return
        }
        try session.verify([token] + guesses)
        pending = guesses
        pass = (guesses.count, 0, monotonicSeconds() - t0, session.lastPassSequences, evidence)
        stats.draftedTokens += guesses.count
    }

    /// Rewinds the guesses not taken (the generation ends). False when the session could not rewind.
    func dropPending(in session: any InferenceSessionBackend) -> Bool {
        guard !pending.isEmpty else { return true }
        defer { pending = [] }
        endPass()
        do {
            try session.truncate(to: session.tokenCount - pending.count)
            return true
        } catch {
            return false
        }
    }

    private func endPass() {
        plan.control.record(drafted: pass.drafted, taken: pass.taken, seconds: pass.seconds, sequences: pass.sequences,
                            evidence: pass.evidence)
        runner.rememberDrafting(plan.control.memory, for: plan.drafter)
        pass = (0, 0, 0, 1, 0)
    }
}

/// A drafter and its control: which guesses a step verifies, and what the control learns from the tokens
/// that follow. Shared by the generation loop (`Speculation`) and the low-level API's `Speculator`.
struct DraftPlan {
    let drafter: any TokenDrafter
    var control: DraftController
    /// Free guesses made at a step without drafts, not verified: checked against the tokens sampled next
    /// (the next first), `watched.taken` of `watched.count` right so far.
    private var watched: (guesses: [Int32], count: Int, taken: Int, evidence: Int) = ([], 0, 0, 0)

    /// Starts from what the model's last generations with this kind of drafter learned.
    init(drafter: any TokenDrafter, maxDraft: Int, runner: ModelRunner) {
        self.drafter = drafter
        self.control = DraftController(maxDraft: maxDraft, memory: runner.drafting(for: drafter) ?? DraftController.Memory(),
                                       observesWithoutPasses: drafter.guessesAreFree)
    }

    /// The guesses to verify after `history` (at most `room`; none when drafting does not pay now) and
    /// their evidence.
    mutating func guesses(after history: [Int32], generated: Int, room: Int) -> (guesses: [Int32], evidence: Int) {
        var guesses: [Int32] = [], evidence = 0
        if drafter.guessesAreFree {
            // Free guesses come first: how many to verify depends on the evidence behind them.
            if room > 0 && control.maxDraft > 0 {
                (guesses, evidence) = drafter.draftWithEvidence(after: history, generated: generated, count: min(room, control.maxDraft))
            }
            let k = guesses.isEmpty ? 0 : min(control.nextDraftLength(evidence: evidence), room)
            if k == 0 && watched.guesses.isEmpty && !guesses.isEmpty { watched = (guesses, guesses.count, 0, evidence) }
            guesses = Array(guesses.prefix(k))
        } else {
            let k = min(control.nextDraftLength(), room)
            if k > 0 { guesses = Array(drafter.draft(after: history, generated: generated, count: k).prefix(k)) }
        }
        if !guesses.isEmpty { watched = ([], 0, 0, 0) }
        return (guesses, evidence)
    }

    /// Checks the sampled `token` against the watched free guesses: the control learns how many a pass
    /// would have accepted once one is wrong or all are right.
    mutating func watch(_ token: Int32) {
        guard let guess = watched.guesses.first else { return }
        if guess == token {
            watched.guesses.removeFirst()
            watched.taken += 1
            if !watched.guesses.isEmpty { return }
        }
        control.observe(drafted: watched.count, taken: watched.taken, evidence: watched.evidence)
        watched = ([], 0, 0, 0)
    }

    /// Forgets the watched guesses (the sequence changed under them).
    mutating func forgetWatched() {
        watched = ([], 0, 0, 0)
    }
}
