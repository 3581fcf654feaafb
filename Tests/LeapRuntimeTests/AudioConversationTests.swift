import Glibc
import LeapCore
import LeapJSON
import LeapMessages
import LeapRuntime
import LeapTestFiles
import Testing

/// Audio in a conversation, end to end: a tiny random-weight LFM2 text model with an lfm2a audio encoder
/// (scripts/fixtures/make_audio_encoder_fixtures.py) transcribes WAV files as llama.cpp's mtmd does
/// (asr_greedy.json: "Perform ASR.", the audio right after `<|im_start|>user\n`, 16 greedy tokens).
@Suite struct AudioConversationTests {
    static let fixtures = fixturesRoot
    static let dir = fixtures + "/audio_encoder"

    static func runner() throws -> ModelRunner {
        var o = RunnerOptions()
        o.mmprojPath = dir + "/lfm2a-512-f16-q8_0.gguf"
        return try ModelRunner.load(path: fixtures + "/models/lfm2-tiny-f32.gguf", options: o)
    }

    @Test func greedyTranscriptsEqualLlamaCppMtmd() throws {
        let runner = try Self.runner()
        #expect(runner.supportsAudioInput && !runner.supportsImages)
        let golden = try JSONParser.parse(String(decoding: try fileBytes(Self.dir + "/asr_greedy.json"), as: UTF8.self))
        let tokenizer = try #require(runner.textTokenizer)
        for c in try #require(golden["cases"]?.arrayValue) {
            let clip = try #require(c["clip"]?.stringValue)
            let expected = try #require(c["generated"]?.arrayValue).compactMap { $0.intValue.map { Int32($0) } }
            let upTo = expected.prefix { !tokenizer.isEndOfGeneration($0) }
            let expectedText = String(decoding: try upTo.flatMap { try tokenizer.piece($0, special: false) }, as: UTF8.self)
            let chunks = try #require(c["chunks"]?.arrayValue)
            let positions = chunks.reduce(Int64(0)) { $0 + ($1["text"]?.arrayValue.map { Int64($0.count) } ?? $1["audio"]?.intValue ?? 0) }

            let conv = runner.createConversation(systemPrompt: "Perform ASR.")
            var o = GenerationOptions()
            o.temperature = 0
            o.repetitionPenalty = 1
            o.maxTokens = expected.count
            let g = try conv.generate(ChatMessage(role: .user, content: [.audio(wav: try fileBytes(Self.dir + "/" + clip))]), options: o)
            var text = ""
            var stats: GenerationStats?
            while let e = try g.next() {
                if case .chunk(let t) = e { text += t }
                if case .complete(_, _, let s) = e { stats = s }
            }
            let s = try #require(stats)
            #expect(Int64(s.promptTokens) == positions, "\(clip)")
            #expect(text == expectedText, "\(clip): \(text.debugDescription) vs mtmd \(expectedText.debugDescription)")
        }
    }

    @Test func rawSamplesAtAnyRateAndBadAudio() throws {
        let runner = try Self.runner()
        // 1 s of a tone at 8 kHz: resampled to 16 kHz, 101 mel frames, 13 rows.
        let tone = (0..<8000).map { Float(sinf(Float($0) * 0.3)) * 0.5 }
        #expect(try runner.embed(.audioPCMF32(samples: tone, sampleRate: 8000)).count == 13)
        let conv = runner.createConversation(systemPrompt: "Perform ASR.")
        func refused(_ part: ChatMessageContent, _ kind: LeapError.Kind, _ fragment: String) {
            do {
                _ = try conv.generate(ChatMessage(role: .user, content: [part]), options: GenerationOptions())
                Issue.record("accepted")
            } catch let e as LeapError {
                #expect(e.kind == kind, "\(e)")
                #expect(e.message.contains(fragment), "\(e.message)")
            } catch { Issue.record("\(error)") }
        }
        refused(.audioPCMF32(samples: [Float](repeating: 0.1, count: 300), sampleRate: 16000), .audioFormat, "too short")
        refused(.audioPCMF32(samples: [], sampleRate: 16000), .audioFormat, "too short")
        refused(.audioPCMF32(samples: [0.1, .nan, 0.2], sampleRate: 16000), .audioFormat, "not finite")
        let stereo = try fileBytes(Self.fixtures + "/audio/wave_s16_stereo_44100.wav")
        refused(.audio(wav: stereo), .audioFormat, "mono required")
        refused(.audio(wav: Array("not a wav file at all".utf8)), .audioFormat, "")
        refused(.image(jpeg: [0xFF, 0xD8, 0xFF]), .unsupported, "an image part needs a vision encoder")
        #expect(conv.history.map(\.role) == [.system])
    }
}
