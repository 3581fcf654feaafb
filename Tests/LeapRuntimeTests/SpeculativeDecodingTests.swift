// Speculative decoding through conversations: with any drafter the output is the output without
// speculation (greedy: the same tokens; sampled: the same draws from the same distribution), on every
// architecture's fixture, the real SmolLM2 / Gemma 3 files, media prompts and constrained turns; and the
// sampled tokens at verified positions follow the model's distribution (chi-square).
import Glibc
import LeapCore
import LeapMessages
import LeapModels
import LeapRuntime
import LeapTestFiles
import Testing

/// A drafter that knows the answer (a run without speculation): in alternate passes its guesses are all
/// right, right for a while then wrong, or wrong from the first, so that passes accept all, some or none.
final class ReferenceDrafter: TokenDrafter {
    let reference: [Int32]   // the completion's tokens
    private(set) var passes = 0
    init(_ reference: [Int32]) { self.reference = reference }

    func draft(after history: [Int32], generated: Int, count: Int) -> [Int32] {
        passes += 1
        let good = passes % 3 == 0 ? count : passes % 3 == 1 ? count / 2 : 0
        return (0..<count).compactMap { j -> Int32? in
            let i = generated + j
            guard i < reference.count else { return nil }
            return j < good ? reference[i] : (reference[i] + 1) % 64
        }
    }
}

/// One turn's text, generated token ids, finish reason and statistics.
struct TurnResult: Equatable {
    var text = ""
    var tokens: [Int32] = []
    var reason: GenerationFinishReason?
    var drafted = 0, accepted = 0
    var output: String { "\(text.debugDescription) \(reason.map { "\($0)" } ?? "-")" }
    static func == (a: TurnResult, b: TurnResult) -> Bool { a.text == b.text && a.tokens == b.tokens && a.reason == b.reason }
}

func runTurn(_ runner: ModelRunner, _ message: ChatMessage, _ options: GenerationOptions, system: String? = nil) throws -> TurnResult {
    var o = options
    o.topLogprobs = 0   // token events: the ids
    let conv = runner.createConversation(systemPrompt: system)
    let g = try conv.generate(message, options: o)
    var r = TurnResult()
    while let e = try g.next() {
        switch e {
        case .chunk(let t): r.text += t
        case .token(let t): r.tokens.append(t.id)
        case .complete(_, let reason, let s):
            r.reason = reason
            r.drafted = s.draftedTokens
            r.accepted = s.acceptedDraftTokens
        default: break
        }
    }
    return r
}

/// The turn without speculation, with prompt lookup, and with the reference drafter: all three alike.
func checkUnchanged(_ runner: ModelRunner, _ message: ChatMessage, _ options: GenerationOptions, system: String? = nil,
                    name: String) throws -> (plain: TurnResult, ngram: TurnResult, oracle: TurnResult) {
    let plain = try runTurn(runner, message, options, system: system)
    #expect(plain.drafted == 0)
    var o = options
    o.drafter = .ngram
    let ngram = try runTurn(runner, message, o, system: system)
    #expect(ngram == plain, "\(name): with prompt lookup \(ngram.output), without \(plain.output)")
    let reference = plain.tokens
    o.drafter = .custom { ReferenceDrafter(reference) }
    o.maxDraftTokens = 5
    // From the prior pass cost and rates, not those an earlier turn measured: the controller then drafts
    // from the first step, so that passes accept all, some and none of the guesses.
    runner.rememberDrafting(DraftController.Memory(), for: ReferenceDrafter([]))
    let oracle = try runTurn(runner, message, o, system: system)
    #expect(oracle == plain, "\(name): with drafts \(oracle.output), without \(plain.output)")
    #expect(oracle.accepted > 0 && oracle.accepted < oracle.drafted, "\(name): \(oracle.accepted) of \(oracle.drafted) accepted")
    return (plain, ngram, oracle)
}

let copyPrompt = """
    Repeat this text exactly: The quick brown fox jumps over the lazy dog. The quick brown fox jumps over \
    the lazy dog again, and then the lazy dog sleeps.
    """

var greedyOptions: GenerationOptions {
    var o = GenerationOptions()
    o.temperature = 0
    o.repetitionPenalty = 1
    o.maxTokens = 40
    return o
}

/// Sampling with every stage of the chain on, seeded.
var sampledOptions: GenerationOptions {
    var o = GenerationOptions()
    o.temperature = 0.8
    o.topK = 40
    o.topP = 0.95
    o.minP = 0.02
    o.repetitionPenalty = 1.1
    o.frequencyPenalty = 0.2
    o.presencePenalty = 0.1
    o.rngSeed = 1234
    o.maxTokens = 40
    return o
}

let realFiles = ["SmolLM2-135M-Instruct.Q4_1", "gemma-3-270m-q4_k_m"]

func realFilePath(_ name: String) -> String { realModelsDir + "/" + name + ".gguf" }

@Suite struct SpeculativeDecodingTests {
    static let fixtures = ["lfm2-tiny-q8_0", "lfm2-tiny-q4_k", "lfm2-tiny-f32", "lfm2-tiny-q4_0-16l", "lfm2moe-tiny-q8_0",
                           "lfm2moe-tiny-q4_k", "llama3-tiny-q8_0", "qwen2-tiny-q8_0", "qwen3-tiny-q4_k", "qwen3-tiny-q8_0"]

    @Test(arguments: fixtures)
    func greedyAndSampledOutputIsUnchangedOnEveryArchitecture(name: String) throws {
        let runner = try ModelRunner.load(path: fixturesDir("models") + "/" + name + ".gguf")
        // Random weights write tool-call markers at random: no parsing, so that every turn runs to its end.
        var greedy = greedyOptions, sampled = sampledOptions
        greedy.functionCallParser = nil
        sampled.functionCallParser = nil
        _ = try checkUnchanged(runner, ChatMessage(role: .user, text: copyPrompt), greedy, name: name + " greedy")
        _ = try checkUnchanged(runner, ChatMessage(role: .user, text: copyPrompt), sampled, name: name + " sampled")
    }

    @Test(arguments: realFiles)
    func realFilesGiveTheSameOutput(name: String) throws {
        try #require(access(realFilePath(name), R_OK) == 0, "\(realFilePath(name)) is missing")
        let runner = try ModelRunner.load(path: realFilePath(name))
        let (_, ngram, _) = try checkUnchanged(runner, ChatMessage(role: .user, text: copyPrompt), greedyOptions, name: name + " greedy")
        // The answer copies the prompt: prompt lookup drafts and most of its guesses hold.
        #expect(ngram.accepted > 0, "\(name): prompt lookup had \(ngram.accepted) of \(ngram.drafted) accepted")
        _ = try checkUnchanged(runner, ChatMessage(role: .user, text: copyPrompt), sampledOptions, name: name + " sampled")
        // A JSON-schema turn: the constrained distribution is the one the guesses are checked against.
        var o = greedyOptions
        o.maxTokens = 60
        o.jsonSchemaConstraint = #"{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name","age"]}"#
        let json = try checkUnchanged(runner, ChatMessage(role: .user, text: "Alice is 31 years old. Give her name and age as JSON."), o,
                                      name: name + " json").plain
        #expect(json.reason == .constraint || json.reason == .maxTokens)
    }

    /// Media in the history: an image prompt (LFM2-VL's tiny fixture) and an audio one (the audio projector).
    @Test func mediaPromptsGiveTheSameOutput() throws {
        // Random weights write tool-call markers at random: no parsing, so that every turn runs to its end.
        var greedy = greedyOptions, sampled = sampledOptions
        greedy.functionCallParser = nil
        sampled.functionCallParser = nil
        var v = RunnerOptions()
        v.mmprojPath = fixturesDir("vision") + "/lfm2vl-tiny-mmproj-f32.gguf"
        let vision = try ModelRunner.load(path: fixturesDir("vision") + "/lfm2vl-tiny-text-f32.gguf", options: v)
        let jpeg = try fileBytes(fixturesDir("vision") + "/e2e_photo_100x60.jpg")
        _ = try checkUnchanged(vision, ChatMessage(role: .user, content: [.image(jpeg: jpeg), .text(copyPrompt)]), greedy, name: "image")

        var a = RunnerOptions()
        a.mmprojPath = fixturesDir("audio_encoder") + "/lfm2a-512-f16-q8_0.gguf"
        let audio = try ModelRunner.load(path: fixturesDir("models") + "/lfm2-tiny-f32.gguf", options: a)
        let wav = try fileBytes(fixturesDir("audio_encoder") + "/clip_1s37.wav")
        _ = try checkUnchanged(audio, ChatMessage(role: .user, content: [.audio(wav: wav), .text(copyPrompt)]), sampled,
                               system: "Perform ASR.", name: "audio")
    }

    /// Stops and caps hold at drafted positions: max_tokens inside a pass, and a second turn on the same
    /// conversation (whose cache must hold exactly the first turn's positions) continues as without speculation.
    @Test func maxTokensAndTheNextTurnAreUnchanged() throws {
        let runner = try ModelRunner.load(path: fixturesDir("models") + "/lfm2-tiny-q8_0.gguf")
        func twoTurns(_ drafter: DrafterChoice?) throws -> [String] {
            let conv = runner.createConversation()
            var out: [String] = []
            for (text, cap) in [(copyPrompt, 7), ("And again: " + copyPrompt, 23)] {
                var o = greedyOptions
                o.maxTokens = cap
                o.drafter = drafter
                let (t, events) = try collect(try conv.generate(ChatMessage(role: .user, text: text), options: o))
                out.append(t)
                #expect(completion(events)?.1 == .maxTokens)
                #expect(completion(events)?.2.completionTokens == cap)
            }
            return out
        }
        let plain = try twoTurns(nil)
        #expect(try twoTurns(.ngram) == plain)
        #expect(try twoTurns(.custom { NGramDrafter(maxNgram: 1, minNgram: 1) }) == plain)
    }

    @Test func whatDraftingLearnedCarriesToTheNextGeneration() throws {
        let runner = try ModelRunner.load(path: fixturesDir("models") + "/llama3-tiny-q8_0.gguf")
        var o = greedyOptions
        o.functionCallParser = nil
        let message = ChatMessage(role: .user, text: copyPrompt)
        let reference = try runTurn(runner, message, o).tokens
        o.drafter = .custom { ReferenceDrafter(reference) }
        o.maxDraftTokens = 5
        #expect(runner.drafting(for: ReferenceDrafter([])) == nil)
        let first = try runTurn(runner, message, o)
        #expect(first.drafted > 0)
        var learned = try #require(runner.drafting(for: ReferenceDrafter([])))
        #expect(learned.cost.stepSeconds > 0)
        #expect(learned.acceptance[0] != DraftController.Acceptance(), "the rate its passes measured, not the prior")
        #expect(runner.drafting(for: NGramDrafter()) == nil, "kept per kind of drafter")
        // A model whose passes were measured dear: the next generation drafts nothing from its first step.
        learned.cost.beta = 5
        runner.rememberDrafting(learned, for: ReferenceDrafter([]))
        let next = try runTurn(runner, message, o)
        #expect(next.drafted == 0)
        #expect(next.tokens == reference)
    }

    @Test func aDraftModelThatIsNotLoadedIsRefused() throws {
        let runner = try ModelRunner.load(path: fixturesDir("models") + "/lfm2-tiny-q8_0.gguf")
        var o = greedyOptions
        o.drafter = .draftModel
        let conv = runner.createConversation()
        #expect(throws: LeapError.self) { _ = try collect(try conv.generate(ChatMessage(role: .user, text: "Hi"), options: o)) }
    }
}
