import Testing
import LeapCore
import LeapGGUF
import LeapJSON
import LeapKernels
import LeapModels
import LeapSpeech

/// One step of a turn: a text token, or an audio frame with what decodeFrame gave for it.
enum TurnStep {
    case text(Int32)
    case audio(SpeechFrameOutput)
}

/// A greedy turn of goldens.json's generation `name` on the tiny backbone, driven as the runtime drives it
/// (SpeechTurn, SpeakingSession.decodeFrame, the feedback row evaluated), with `vocoder` in place of the
/// fixture's. Text steps the golden forced are forced; the turn runs until it is done or `limit` steps.
func speakTurn(_ name: String, vocoder: VocoderWeights, limit: Int = 200) throws -> (steps: [TurnStep], done: Bool, tail: [Float]) {
    let g = try #require(try goldens()["generations"]?[name])
    let mode = try #require(SpeechOutputMode(rawValue: g["mode"]?.stringValue ?? ""))
    let prompt = (g["prompt"]?.arrayValue ?? []).map { Int32($0.intValue ?? -1) }
    var forced: [Int: Int32] = [:]
    for (k, v) in try #require(g["forced"]?.objectValue) { forced[Int(k) ?? -1] = Int32(v.intValue ?? -1) }

    let backbone = try LanguageModel.load(path: fixturePath("speech-backbone.gguf"), threads: 1)
    let ctx = try backbone.makeContext(ContextOptions(contextSize: 512, kvCacheType: .f32, threads: 1))
    let model = SpeechOutputModel(vocoder: vocoder, detokenizer: try AudioDetokenizer(path: fixturePath("tokenizer-tiny.gguf"), vocoder: vocoder, threads: 1))
    var config = SpeechConfig(mode: mode)
    config.audioSampling = .greedy
    let session = try SpeakingSession(model: model, config: config, backboneWidth: backbone.config.nEmbd, threads: 1, kvCacheType: .f32)
    session.startTurn()
    var turn = SpeechTurn(config)
    try ctx.eval(tokens: prompt)
    var steps: [TurnStep] = []
    var textSteps = 0
    for _ in 0..<limit {
        switch turn.next {
        case .text:
            let logits = try ctx.logits()
            var best = 0
            for i in logits.indices where logits[i] > logits[best] { best = i }
            let token = forced[textSteps] ?? Int32(best)
            textSteps += 1
            if turn.acceptText(token) == .endOfTurn { return (steps, true, session.finishTurn()) }
            steps.append(.text(token))
            try ctx.eval(tokens: [token])
        case .audio:
            let out = try session.decodeFrame(hidden: try ctx.lastHiddenState())
            turn.acceptAudio(out.frame)
            steps.append(.audio(out))
            try out.feedback.withUnsafeBufferPointer { try ctx.eval(embeddings: $0, outputHead: turn.next == .text) }
        case .done:
            return (steps, true, session.finishTurn())
        }
    }
    return (steps, false, session.finishTurn())
}

// The depthformer draws from 2049 classes in every codebook, so a later codebook can draw the end-of-audio
// code 2048. The fixture scales that class's logit row in one codebook (vocoderBytes) until it wins the
// argmax at some frame of a golden turn: codebook 4 at the second frame of the sequential turn, codebook 7
// (the last row of the feedback table) at the 30th frame of the interleaved one. The turn must go on to its
// end: the frame does not end the audio, it is fed back as liquid-audio feeds it (the sum of the 8 rows
// code_k + 2049·k of audio_embedding, row 2048 of that codebook's block included), it adds no samples, and
// the turn's samples are the waveform of its other frames, replayed here into a fresh session.
@Test(arguments: [("sequential", 4, Float(3)), ("interleaved", 7, Float(2))])
func aLaterCodebooksEndCodeIsFedBackAndLeftOutOfTheWaveform(name: String, codebook: Int, scale: Float) throws {
    let vocoder = try VocoderWeights(file: GGUFFile(bytes: vocoderBytes(scalingEndCodeOf: codebook, by: scale)))
    let turn = try speakTurn(name, vocoder: vocoder)
    #expect(turn.done, "the turn did not end")
    let frames: [SpeechFrameOutput] = turn.steps.compactMap { if case .audio(let o) = $0 { return o } else { return nil } }
    let later = frames.indices.filter { frames[$0].frame.codes[0] != 2048 && frames[$0].frame.codes.contains(2048) }
    #expect(!later.isEmpty, "no frame drew 2048 in a later codebook")
    for i in later {
        #expect(frames[i].frame.codes[codebook] == 2048 && !frames[i].frame.isEndOfAudio)
        #expect(frames[i].samples.isEmpty)
    }
    // the audio went on after the first such frame and was ended by codebook 0
    let first = try #require(later.first)
    #expect(frames[(first + 1)...].contains { $0.frame.hasWaveform })
    #expect(frames.last?.frame.codes == [Int32](repeating: 2048, count: 8))

    // every frame's feedback row: Σ_k table[code_k + 2049·k] from the dequantized table, added in double
    let table = try vocoder.file.dequantize(try vocoder.file.requireTensor("audio_embedding.embedding.weight"))
    let B = vocoder.backboneWidth
    for (i, f) in frames.enumerated() {
        var worst = 0.0
        for j in 0..<B {
            var s = 0.0
            for (k, c) in f.frame.codes.enumerated() { s += Double(table[(Int(c) + 2049 * k) * B + j]) }
            worst = max(worst, abs(Double(f.feedback[j]) - s))
        }
        #expect(worst < 1e-5, "frame \(i) \(f.frame.codes): feedback differs by \(worst)")
    }

    // the samples: the frames without a 2048, through a fresh session's waveform
    let streamed = frames.flatMap(\.samples) + turn.tail
    let replay = try SpeakingSession(model: SpeechOutputModel(vocoder: vocoder, detokenizer: try AudioDetokenizer(path: fixturePath("tokenizer-tiny.gguf"), vocoder: vocoder, threads: 1)),
                                     config: SpeechConfig(mode: .sequential), backboneWidth: B, threads: 1, kvCacheType: .f32)
    replay.startTurn()
    var expected: [Float] = []
    let kept = frames.filter { !$0.frame.codes.contains(2048) }
    for f in kept { expected += try replay.waveform(f.frame) }
    expected += replay.finishTurn()
    #expect(streamed.count == 1920 * kept.count)
    #expect(streamed == expected)
}

// waveform: a frame holding 2048 anywhere gives no samples and leaves the stream as it was; a frame that is
// not 8 codes in 0...2048 is refused.
@Test func waveformLeavesOutFramesHolding2048() throws {
    let codes = try #require(try goldens()["waveform"]?["codes"]?.arrayValue).prefix(3).map { f in
        AudioFrame(codes: (f.arrayValue ?? []).map { Int32($0.intValue ?? -1) })
    }
    let session = try SpeakingSession(model: try speechModel(), config: SpeechConfig(mode: .sequential), backboneWidth: 64, threads: 1, kvCacheType: .f32)
    func run(_ frames: [AudioFrame]) throws -> [[Float]] {
        session.startTurn()
        return try frames.map { try session.waveform($0) } + [session.finishTurn()]
    }
    var held = codes[1]
    held.codes[5] = 2048
    #expect(!held.hasWaveform && !held.isEndOfAudio)
    let with = try run([codes[0], held, codes[2]])
    let without = try run([codes[0], codes[2]])
    #expect(with[1].isEmpty)
    #expect([with[0], with[2], with[3]] == without)
    #expect(with[2] != (try run([codes[0], codes[1], codes[2]]))[2])   // the frame itself would have changed it
    for bad: [Int32] in [[0, 1, 2, 3, 4, 5, 6, 2049], [0, 1, 2, 3, -1, 5, 6, 7], [0, 1, 2]] {
        #expect(leapError { _ = try session.waveform(AudioFrame(codes: bad)) }?.kind == .invalidArgument)
    }
}
