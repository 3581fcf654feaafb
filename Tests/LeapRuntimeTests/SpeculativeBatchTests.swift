// Speculative decoding of conversations generating at once: each conversation's token and drafts are one
// span of the pass the batcher steps them in, together with the other conversations' tokens and drafts,
// and every conversation still gets exactly the tokens it gets alone without speculation.
import Glibc
import LeapCore
import LeapMessages
import LeapModels
import LeapRuntime
import LeapRuntimeTestSupport
import LeapTestFiles
import Testing

@Suite struct SpeculativeBatchTests {
    static let prompts = [copyPrompt, "Tell me a story about a cat",
                          "Repeat after me: one two three four, one two three four, one two three four.", "1 2 3 4 5"]

    /// Turn i of `prompts` with `options[i]`, every one on its own thread at once.
    static func runTogether(_ runner: ModelRunner, _ options: [GenerationOptions]) -> [Result<TurnResult, any Error>] {
        onThreads(prompts.count) { i in try runTurn(runner, ChatMessage(role: .user, text: prompts[i]), options[i]) }
    }

    /// Greedy, no tool-call parsing (random weights write its markers at random: every turn runs to its end).
    static var greedy: GenerationOptions {
        var o = greedyOptions
        o.functionCallParser = nil
        return o
    }

    /// Runs the four turns at once (up to `attempts` times, until `shared` says the run exercised what the
    /// test is about: on a loaded machine the threads can run one after another) and checks every run's
    /// tokens against the turns alone without speculation. Returns the batcher's statistics of the runs and
    /// the drafted and accepted counts of each conversation summed over them.
    static func checkTogether(_ runner: ModelRunner, _ options: [GenerationOptions], name: String, attempts: Int,
                              until done: (DecodeBatcher.Statistics) -> Bool) throws -> (DecodeBatcher.Statistics, [(drafted: Int, accepted: Int)]) {
        let alone = try prompts.map { try runTurn(runner, ChatMessage(role: .user, text: $0), greedy) }
        #expect(alone.allSatisfy { $0.drafted == 0 && !$0.tokens.isEmpty })
        let batcher = try #require(runner.languageModel?.batcher)
        let before = batcher.statistics
        var drafts = [(drafted: Int, accepted: Int)](repeating: (0, 0), count: prompts.count)
        for _ in 0..<attempts {
            let together = runTogether(runner, options)
            for i in prompts.indices {
                let r = try together[i].get()
                #expect(r == alone[i], "\(name): conversation \(i) at once \(r.output), alone without drafts \(alone[i].output)")
                drafts[i].drafted += r.drafted
                drafts[i].accepted += r.accepted
            }
            var s = batcher.statistics
            s.steps -= before.steps
            s.rows -= before.rows
            s.sharedSpans -= before.sharedSpans
            s.deferred -= before.deferred
            if done(s) { break }
        }
        var s = batcher.statistics
        s.sharedSpans -= before.sharedSpans
        s.deferred -= before.deferred
        return (s, drafts)
    }

    /// Conversations 0 (prompt lookup) and 2 (a drafter that knows the answer: all, some or none of its
    /// guesses right) draft, 1 and 3 do not; the drafted passes share the step with the others' tokens.
    static func mixedOptions(_ runner: ModelRunner) throws -> [GenerationOptions] {
        var lookup = greedy
        lookup.drafter = .ngram
        var oracle = greedy
        let reference = try runTurn(runner, ChatMessage(role: .user, text: prompts[2]), greedy).tokens
        oracle.drafter = .custom { ReferenceDrafter(reference) }
        oracle.maxDraftTokens = 5
        return [lookup, greedy, oracle, greedy]
    }

    /// Q8_0 LFM2 and llama: their few-token kernels keep each row's one-token order on every path, so a
    /// row's logits do not depend on the rows beside it.
    @Test(arguments: ["lfm2-tiny-q8_0", "llama3-tiny-q8_0"])
    func draftsShareTheSteppedPassAndEachConversationKeepsItsTokens(name: String) throws {
        let runner = try ModelRunner.load(path: fixturesDir("models") + "/" + name + ".gguf")
        let (stats, drafts) = try Self.checkTogether(runner, try Self.mixedOptions(runner), name: name, attempts: 8) { $0.sharedSpans > 0 }
        #expect(drafts[2].drafted > 0 && drafts[2].accepted > 0, "\(name): \(drafts)")
        #expect(drafts[1].drafted == 0 && drafts[3].drafted == 0)
        // A pass held a multi-row span (a token and its drafts) and another conversation's rows: drafts
        // that bypassed the batch would leave this at 0.
        #expect(stats.sharedSpans > 0, "\(name): no drafted span shared a pass: \(stats)")
        #expect(stats.largest <= 15)
    }

    /// SmolLM2 answers the copy prompts by copying: prompt lookup drafts and its guesses hold.
    @Test func theRealSmolLM2KeepsItsTokensWithDraftsSharingThePass() throws {
        let path = realFilePath("SmolLM2-135M-Instruct.Q4_1")
        try #require(access(path, R_OK) == 0, "\(path) is missing")
        let runner = try ModelRunner.load(path: path)
        var lookup = Self.greedy
        lookup.drafter = .ngram
        let options = [lookup, Self.greedy, lookup, Self.greedy]
        let (stats, drafts) = try Self.checkTogether(runner, options, name: "SmolLM2", attempts: 4) { $0.sharedSpans > 0 }
        #expect(drafts[0].accepted > 0 && drafts[2].drafted > 0, "SmolLM2: \(drafts)")
        #expect(stats.sharedSpans > 0, "SmolLM2: no drafted span shared a pass: \(stats)")
    }

    /// Four conversations drafting up to 14 tokens each (guesses always right, so the control keeps drafting
    /// long): their spans together exceed the 15 rows of a pass, the ones that do not fit wait for the next
    /// pass, and every conversation still gets its tokens.
    @Test(arguments: ["lfm2-tiny-q8_0", "llama3-tiny-q8_0"])
    func spansBeyondTheRowLimitWaitForTheNextPass(name: String) throws {
        let runner = try ModelRunner.load(path: fixturesDir("models") + "/" + name + ".gguf")
        let options = try Self.prompts.map { prompt in
            let reference = try runTurn(runner, ChatMessage(role: .user, text: prompt), Self.greedy).tokens
            var o = Self.greedy
            o.drafter = .custom { ReplayingDrafter(reference) }
            o.maxDraftTokens = 14
            return o
        }
        let (stats, drafts) = try Self.checkTogether(runner, options, name: name, attempts: 8) { $0.deferred > 0 && $0.sharedSpans > 0 }
        #expect(drafts.allSatisfy { $0.accepted > 0 }, "\(name): \(drafts)")
        #expect(stats.deferred > 0, "\(name): no span had to wait for a pass: \(stats)")
        #expect(stats.largest <= 15, "\(name): a pass of \(stats.largest) rows")
    }
}

/// Guesses the known output: every guess right.
final class ReplayingDrafter: TokenDrafter {
    let output: [Int32]
    init(_ output: [Int32]) { self.output = output }
    func draft(after history: [Int32], generated: Int, count: Int) -> [Int32] {
        Array(output[min(generated, output.count)..<min(generated + count, output.count)])
    }
}
