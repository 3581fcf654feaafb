import Testing
import LeapCore
import LeapJSON
import LeapKernels
import LeapModels
import LeapSpeech

private enum Event: Equatable, CustomStringConvertible {
    case text(Int32)
    case audio([Int32])
    var description: String {
        switch self {
        case .text(let t): return "t\(t)"
        case .audio(let c): return c[0] == 2048 ? "EOA" : "a\(c)"
        }
    }
}

private func ints(_ v: JSONValue?) -> [Int32] { (v?.arrayValue ?? []).map { Int32($0.intValue ?? -1) } }

func speechModel() throws -> SpeechOutputModel {
    let v = try #require(tinyVocoder)
    return SpeechOutputModel(vocoder: v, detokenizer: try AudioDetokenizer(path: fixturePath("tokenizer-tiny.gguf"), vocoder: v, threads: 1))
}

private func argmax(_ x: UnsafeBufferPointer<Float>) -> Int32 {
    var best = 0
    for i in x.indices where x[i] > x[best] { best = i }
    return Int32(best)
}

// liquid-audio's generate_sequential / generate_interleaved with greedy text and codes on the tiny backbone
// and vocoder, replayed through SpeechTurn and SpeakingSession as the runtime drives them: the token and
// code streams are equal. The text steps the fixture script forced (standing for the runtime's text
// sampler: <|audio_start|>, <|text_end|>, <|im_end|>) are forced here too; every other choice is greedy,
// and the script checked that no greedy choice was closer than 1e-4 (the backbone runs in F32 with an F32
// KV cache, like the reference).
@Test(arguments: ["sequential", "interleaved", "interleaved_early_end"])
func greedyGenerationMatchesLiquidAudio(name: String) throws {
    let g = try #require(try goldens()["generations"]?[name])
    let mode = try #require(SpeechOutputMode(rawValue: g["mode"]?.stringValue ?? ""))
    let prompt = ints(g["prompt"])
    let limit = Int(g["max_new_tokens"]?.intValue ?? 0)
    var forced: [Int: Int32] = [:]
    for (k, v) in try #require(g["forced"]?.objectValue) { forced[Int(k) ?? -1] = Int32(v.intValue ?? -1) }
    let expected: [Event] = (g["stream"]?.arrayValue ?? []).map { e in
        if let t = e["text"]?.intValue { return .text(Int32(t)) }
        return .audio(ints(e["audio"]))
    }

    let backbone = try LanguageModel.load(path: fixturePath("speech-backbone.gguf"), threads: 1)
    let ctx = try backbone.makeContext(ContextOptions(contextSize: 256, kvCacheType: .f32, threads: 1))
    var config = SpeechConfig(mode: mode)
    config.audioSampling = .greedy
    let session = try SpeakingSession(model: try speechModel(), config: config, backboneWidth: backbone.config.nEmbd,
                                      threads: 1, kvCacheType: .f32)
    session.startTurn()
    var turn = SpeechTurn(config)
    try ctx.eval(tokens: prompt)
    var stream: [Event] = []
    var textSteps = 0
    var samples = 0
    loop: for _ in 0..<limit {
        switch turn.next {
        case .text:
            let token = try forced[textSteps] ?? argmax(ctx.logits())
            textSteps += 1
            if turn.acceptText(token) == .endOfTurn {
                if mode == .sequential { stream.append(.text(token)) }  // liquid-audio's sequential mode yields it
                break loop
            }
            stream.append(.text(token))
            try ctx.eval(tokens: [token])
        case .audio:
            let out = try session.decodeFrame(hidden: try ctx.lastHiddenState())
            turn.acceptAudio(out.frame)
            stream.append(.audio(out.frame.codes))
            samples += out.samples.count
            // the text logits are only needed when a text step follows
            try out.feedback.withUnsafeBufferPointer { try ctx.eval(embeddings: $0, outputHead: turn.next == .text) }
        case .done:
            break loop
        }
    }
    #expect(stream == expected, "\(stream)")
    // 1920 samples a frame that has audio (no code 2048), the first one 480 short, the turn's last 480 at the end
    let frames = expected.filter { if case .audio(let c) = $0 { return !c.contains(2048) } else { return false } }.count
    samples += session.finishTurn().count
    #expect(samples == 1920 * frames)
}

// Evaluating without the output head leaves the same hidden state and no logits.
@Test func hiddenOnlyEvalKeepsTheHiddenState() throws {
    let backbone = try LanguageModel.load(path: fixturePath("speech-backbone.gguf"), threads: 1)
    let row = try backbone.tokenEmbedding(60)
    func run(_ head: Bool) throws -> (hidden: [Float], logits: Bool) {
        let ctx = try backbone.makeContext(ContextOptions(contextSize: 32, kvCacheType: .f32, threads: 1))
        try ctx.eval(tokens: [1, 6, 20])
        try row.withUnsafeBufferPointer { try ctx.eval(embeddings: $0, outputHead: head) }
        return (Array(try ctx.lastHiddenState()), (try? ctx.logits()) != nil)
    }
    let with = try run(true), without = try run(false)
    #expect(with.hidden == without.hidden)
    #expect(with.logits && !without.logits)
}

// Sampled codes (the runner's sequential defaults) come from the session's seeded RNG: the same seed gives the
// same frames, another seed others; a vocoder for another backbone width is refused.
@Test func sessionSamplingIsSeeded() throws {
    let model = try speechModel()
    var gen = TestNumbers(state: 3)
    let hidden: [[Float]] = (0..<6).map { _ in (0..<64).map { _ in gen.next() } }
    func run(_ seed: UInt64) throws -> [[Int32]] {
        let s = try SpeakingSession(model: model, config: SpeechConfig(mode: .sequential, seed: seed), backboneWidth: 64, threads: 1)
        s.startTurn()
        return try hidden.map { h in try h.withUnsafeBufferPointer { try s.decodeFrame(hidden: $0).frame.codes } }
    }
    let a = try run(9)
    #expect(try run(9) == a)
    #expect(try run(10) != a)
    #expect(leapError { _ = try SpeakingSession(model: model, config: SpeechConfig(mode: .sequential), backboneWidth: 2048) }?.kind == .modelLoading)
}
