// Conversations of one model generating at the same time, from their own threads: their tokens are stepped
// together through the weights, and each still gets exactly what it gets alone (its own options, sampler,
// stops), also when one of them is stopped midway.
import Glibc
import LeapCore
import LeapMessages
import LeapRuntime
import LeapRuntimeTestSupport
import LeapTestFiles
import Testing

@Suite struct ConcurrentConversationTests {
    /// Q8_0: its batched matmul equals the one-token one bit for bit on every kernel path
    /// (LeapModelsTests steppedDecodeOfQ4_0AndQ8_0IsExactOnTheDefaultPath), so sampling sees the same logits.
    static let model = fixturesDir("models") + "/lfm2-tiny-q8_0.gguf"

    /// Different sampling, lengths and stops per conversation.
    static let options: [GenerationOptions] = {
        var a = GenerationOptions(); a.temperature = 0; a.maxTokens = 14
        var b = GenerationOptions(); b.temperature = 0.9; b.rngSeed = 7; b.maxTokens = 9
        var c = GenerationOptions(); c.temperature = 0; c.maxTokens = 22; c.repetitionPenalty = 1.3
        var d = GenerationOptions(); d.temperature = 1.2; d.topK = 5; d.rngSeed = 3; d.maxTokens = 17
        return [a, b, c, d]
    }()
    /// The last prompt is long (two prefill passes of up to 512 positions): it is prefilled while the
    /// others decode, its passes taking turns with their steps.
    static let prompts = ["Hello there", "Tell me a story about a cat", "1 2 3",
                          String(repeating: "Why is the sky blue, and why is the sea blue too? ", count: 60)]

    struct Outcome: Equatable {
        var text = ""
        var reason: GenerationFinishReason?
        var tokens = 0
    }

    /// Runs conversation `i`'s turn to the end; `stopAfter` chunks, it asks to stop (at the next token boundary).
    static func run(_ conv: Conversation, _ i: Int, stopAfter: Int? = nil) throws -> Outcome {
        let g = try conv.generate(ChatMessage(role: .user, text: prompts[i]), options: options[i])
        var out = Outcome()
        var chunks = 0
        while let e = try g.next() {
            switch e {
            case .chunk(let t):
                out.text += t
                chunks += 1
                if chunks == stopAfter { conv.stop() }
            case .complete(_, let r, let stats):
                out.reason = r
                out.tokens = stats.completionTokens
            default: break
            }
        }
        return out
    }

    /// Every conversation on its own thread at once.
    static func runTogether(_ runner: ModelRunner, stopAfter: [Int?]) -> [Result<Outcome, any Error>] {
        let conversations = Self.prompts.indices.map { _ in runner.createConversation() }
        return onThreads(conversations.count) { i in try Self.run(conversations[i], i, stopAfter: stopAfter[i]) }
    }

    @Test(.enabled(if: access(ConcurrentConversationTests.model, R_OK) == 0))
    func conversationsGeneratingAtOnceGetWhatTheyGetAlone() throws {
        let runner = try ModelRunner.load(path: Self.model)
        let alone = try Self.prompts.indices.map { try Self.run(runner.createConversation(), $0) }
        #expect(alone.allSatisfy { $0.tokens > 0 })
        let batcher = try #require(runner.languageModel?.batcher)
        // The steps of this tiny model take microseconds: on a loaded machine the four threads can run one
        // after another. Every run must give each conversation its tokens alone; at least one of a few runs
        // must have stepped two conversations together.
        for _ in 0..<5 {
            let together = Self.runTogether(runner, stopAfter: [nil, nil, nil, nil])
            for i in Self.prompts.indices {
                #expect(try together[i].get() == alone[i], "conversation \(i)")
            }
            if batcher.statistics.largest >= 2 { break }
        }
        #expect(batcher.statistics.largest >= 2, "no two conversations were stepped together: \(batcher.statistics)")
    }

    /// One of four stopped after its second chunk: it completes as interrupted with its text so far, the
    /// others are unaffected, and none waits on it afterwards.
    @Test(.enabled(if: access(ConcurrentConversationTests.model, R_OK) == 0))
    func stoppingOneOfFourLeavesTheOthersAsTheyAreAlone() throws {
        let runner = try ModelRunner.load(path: Self.model)
        let alone = try Self.prompts.indices.map { try Self.run(runner.createConversation(), $0) }
        let stoppedAlone = try Self.run(runner.createConversation(), 2, stopAfter: 2)
        #expect(stoppedAlone.reason == .interrupted)
        let together = Self.runTogether(runner, stopAfter: [nil, nil, 2, nil])
        for i in Self.prompts.indices {
            #expect(try together[i].get() == (i == 2 ? stoppedAlone : alone[i]), "conversation \(i)")
        }
    }
}
