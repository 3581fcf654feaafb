import Glibc
import LeapCore
import LeapGGUF
import LeapKernels
import LeapMessages
import LeapModels
import LeapRuntime
import LeapSpeech
import LeapTestFiles
import Testing

/// A model that speaks, through the conversation runtime: a tiny random-weight LFM2 text model with
/// LFM2.5-Audio's vocoder and audio tokenizer files (Tests/Fixtures/speech, made by
/// scripts/fixtures/make_speech_fixtures.py; the speech components are checked against liquid-audio in
/// LeapSpeechTests). The runtime must drive them as the documented loop does: the expectation replays that
/// loop by hand on the same files and compares text and samples.
@Suite struct SpeakingConversationTests {
    static let fixtures = fixturesRoot

    static func runner(vocoder: String = fixtures + "/speech/vocoder-tiny.gguf") throws -> ModelRunner {
        var o = RunnerOptions()
        o.audioDecoderPath = vocoder
        o.audioTokenizerPath = fixtures + "/speech/tokenizer-tiny.gguf"
        return try ModelRunner.load(path: fixtures + "/models/lfm2-tiny-f32.gguf", options: o)
    }

    /// The documented SpeechTurn loop by hand: greedy text (first largest logit), greedy audio codes.
    static func replay(_ runner: ModelRunner, prompt: [Int32], mode: SpeechOutputMode, steps: Int) throws -> (text: [Int32], samples: [Float], frames: [AudioFrame]) {
        let lm = try #require(runner.languageModel)
        let speech = try #require(runner.speech)
        var config = SpeechConfig(mode: mode)
        config.audioSampling.temperature = 0
        let session = try SpeakingSession(model: speech, config: config, backboneWidth: lm.config.nEmbd, threads: lm.threads)
        session.startTurn()
        var turn = SpeechTurn(config)
        let ctx = try lm.makeContext(contextSize: runner.contextSize)
        try ctx.eval(tokens: prompt)
        var text: [Int32] = [], samples: [Float] = [], frames: [AudioFrame] = []
        for _ in 0..<steps {
            if turn.next == .done { break }
            if turn.next == .text {
                let logits = try ctx.logits()
                var best = 0
                for i in 1..<logits.count where logits[i] > logits[best] { best = i }
                let t = Int32(best)
                if runner.tokenizer.isEndOfGeneration(t) || turn.acceptText(t) == .endOfTurn { break }
                text.append(t)
                try ctx.eval(tokens: [t])
            } else {
                let out = try session.decodeFrame(hidden: try ctx.lastHiddenState())
                turn.acceptAudio(out.frame)
                samples += out.samples
                frames.append(out.frame)
                try out.feedback.withUnsafeBufferPointer { try ctx.eval(embeddings: $0) }
            }
        }
        return (text, samples + session.finishTurn(), frames)
    }

    @Test(arguments: [SpeechOutputMode.interleaved, .sequential])
    func theRuntimeSpeaksAsTheSpeechLoopDoes(mode: SpeechOutputMode) throws {
        let runner = try Self.runner()
        #expect(runner.supportsAudioOutput && !runner.supportsImages)
        var o = GenerationOptions()
        o.temperature = 0
        o.repetitionPenalty = 1
        o.audioTemperature = 0
        o.audioMode = mode
        o.maxTokens = 30
        let message = ChatMessage(role: .user, text: "Hello")
        let prompt = try PromptBuilder(runner: runner).tokens(for: [message], tools: [], options: o)
        let expected = try Self.replay(runner, prompt: prompt, mode: mode, steps: 30)

        let conv = runner.createConversation()
        let g = try conv.generate(message, options: o)
        var text = "", samples: [Float] = [], order: [String] = []
        var final: ChatMessage?
        while let e = try g.next() {
            switch e {
            case .chunk(let t): text += t; order.append("t")
            case .audioSample(let s, let rate): #expect(rate == 24000); samples += s; order.append("a")
            case .complete(let m, _, _): final = m
            default: break
            }
        }
        let tokenizer = try #require(runner.textTokenizer)
        let markers: Set<Int32> = [SpeechTokens.audioStart, SpeechTokens.textEnd]
        let expectedText = String(decoding: try expected.text.filter { !markers.contains($0) }.flatMap { try tokenizer.piece($0, special: true) }, as: UTF8.self)
        #expect(text == expectedText)
        #expect(samples == expected.samples)
        if mode == .interleaved {
            // 6 text tokens, then 12 frames: 1440 samples for a turn's first frame, 1920 after, 480 at the end.
            #expect(samples.count >= 1440 + 11 * 1920 + 480)
            #expect(order.first == "t" && order.contains("a"))
        }
        // The turn's audio ends the assistant message, after its text.
        let m = try #require(final)
        if case .audioPCMF32(let s, let rate)? = m.content.last {
            #expect(s == samples && rate == 24000)
        } else {
            #expect(samples.isEmpty)
        }
    }

    @Test func aTranscriptionPromptProducesTextOnly() throws {
        let runner = try Self.runner()
        let conv = runner.createConversation(systemPrompt: "Perform ASR.")
        var o = GenerationOptions()
        o.temperature = 0
        o.maxTokens = 20
        let g = try conv.generate(ChatMessage(role: .user, text: "Hello"), options: o)
        while let e = try g.next() {
            if case .audioSample = e { Issue.record("audio for an ASR prompt") }
        }
    }

    @Test func aStopEndsAudioWithinOneFrame() throws {
        let runner = try Self.runner()
        let conv = runner.createConversation()
        var o = GenerationOptions()
        o.temperature = 0
        o.audioTemperature = 0
        o.audioMode = .interleaved
        o.maxTokens = 40
        let g = try conv.generate(ChatMessage(role: .user, text: "Hello"), options: o)
        var afterStop = 0, stopped = false
        var reason: GenerationFinishReason?
        while let e = try g.next() {
            if case .audioSample = e {
                if stopped { afterStop += 1 } else { conv.stop(); stopped = true }
            }
            if case .complete(_, let r, _) = e { reason = r }
        }
        #expect(stopped)
        #expect(reason == .interrupted)
        #expect(afterStop <= 1)   // the waveform's tail may follow the last frame
    }
    // A later codebook that draws the end-of-audio code 2048 (the vocoder's class-2048 logit row of codebook
    // 4 doubled: with greedy codes the 18th frame of this turn holds it) does not end the audio and does not
    // fail the turn: the generation completes, its samples are the speech loop's, which leaves that frame
    // out of the waveform (LeapSpeechTests check the rule itself), and the message holds them.
    @Test func aLaterCodebooksEndCodeDoesNotFailTheTurn() throws {
        var bytes = try fileBytes(Self.fixtures + "/speech/vocoder-tiny.gguf")
        let t = try GGUFFile(bytes: bytes).requireTensor("depth_embeddings.4.to_logits.weight")
        let row = t.fileOffset + 2048 * t.rowBytes
        for at in stride(from: row, to: row + t.rowBytes, by: 18) {   // Q4_0 blocks: F16 scale, 16 bytes
            let d = Float16(bitPattern: UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8)
            let doubled = Float16(Float(d) * 2).bitPattern
            bytes[at] = UInt8(doubled & 0xff)
            bytes[at + 1] = UInt8(doubled >> 8)
        }
        let path = "/tmp/leap-speech-end-code-\(getpid()).gguf"
        let f = try #require(fopen(path, "wb"))
        fwrite(bytes, 1, bytes.count, f)
        fclose(f)
        defer { unlink(path) }
        let runner = try Self.runner(vocoder: path)

        var o = GenerationOptions()
        o.temperature = 0
        o.repetitionPenalty = 1
        o.audioTemperature = 0
        o.audioMode = .interleaved
        o.maxTokens = 60
        let message = ChatMessage(role: .user, text: "Hello")
        let prompt = try PromptBuilder(runner: runner).tokens(for: [message], tools: [], options: o)
        let expected = try Self.replay(runner, prompt: prompt, mode: .interleaved, steps: 60)
        let held = expected.frames.filter { !$0.isEndOfAudio && !$0.hasWaveform }
        #expect(!held.isEmpty && held.allSatisfy { $0.codes[4] == 2048 }, "\(expected.frames.map(\.codes))")
        #expect(expected.samples.count == 1920 * expected.frames.filter(\.hasWaveform).count)

        let g = try runner.createConversation().generate(message, options: o)
        var samples: [Float] = []
        var final: ChatMessage?
        var reason: GenerationFinishReason?
        while let e = try g.next() {
            if case .audioSample(let s, _) = e { samples += s }
            if case .complete(let m, let r, _) = e { final = m; reason = r }
        }
        #expect(reason == .maxTokens)
        #expect(samples == expected.samples)
        if case .audioPCMF32(let s, _)? = final?.content.last { #expect(s == samples) } else { Issue.record("no audio in the message") }
    }
}

