import Glibc
import LeapCore
import LeapJSON
import LeapMessages
import LeapRuntime
import LeapTestFiles
import Testing

/// An image in a conversation, end to end: a tiny random-weight LFM2-VL (text model + mmproj, made by
/// scripts/fixtures/make_vision_fixtures.py) answers about JPEG files as llama.cpp's mtmd does
/// (mtmd_e2e.json, scripts/fixtures/make_vision_e2e_goldens.py: the same pixels, mtmd's layout and greedy
/// tokens).
@Suite struct VisionConversationTests {
    static let dir = fixturesRoot + "/vision"

    static func runner(mmproj: String = "lfm2vl-tiny-mmproj-f32.gguf") throws -> ModelRunner {
        var o = RunnerOptions()
        o.mmprojPath = dir + "/" + mmproj
        o.contextSize = 4096
        return try ModelRunner.load(path: dir + "/lfm2vl-tiny-text-f32.gguf", options: o)
    }

    @Test func greedyAnswersAboutJPEGsEqualLlamaCppMtmd() throws {
        let runner = try Self.runner()
        #expect(runner.supportsImages && !runner.supportsAudioInput)
        let golden = try JSONParser.parse(String(decoding: try fileBytes(Self.dir + "/mtmd_e2e.json"), as: UTF8.self))
        let cases = try #require(golden["cases"]?.arrayValue)
        #expect(cases.count >= 3)
        let tokenizer = try #require(runner.textTokenizer)
        for c in cases {
            let file = try #require(c["file"]?.stringValue)
            let jpeg = try fileBytes(Self.dir + "/" + file)
            let expected = try #require(c["tokens"]?.arrayValue).compactMap { $0.intValue.map { Int32($0) } }
            // The text of mtmd's tokens up to the end of the turn (mtmd did not stop there).
            let upTo = expected.prefix { !tokenizer.isEndOfGeneration($0) }
            let expectedText = String(decoding: try upTo.flatMap { try tokenizer.piece($0, special: false) }, as: UTF8.self)

            let conv = runner.createConversation()
            var o = GenerationOptions()
            o.temperature = 0
            o.repetitionPenalty = 1
            o.maxTokens = expected.count
            let g = try conv.generate(ChatMessage(role: .user, content: [.image(jpeg: jpeg), .text("Describe this image.")]), options: o)
            var text = ""
            var stats: GenerationStats?
            while let e = try g.next() {
                if case .chunk(let t) = e { text += t }
                if case .complete(_, _, let s) = e { stats = s }
            }
            let s = try #require(stats)
            #expect(Int64(s.promptTokens + s.cachedPromptTokens) == c["prompt_positions"]?.intValue, "\(file)")
            #expect(text == expectedText, "\(file): \(text.debugDescription) vs mtmd \(expectedText.debugDescription)")
        }
    }

    @Test func embeddingsFollowTheLayoutAndAreTheSameFromPixels() throws {
        let runner = try Self.runner()
        let jpeg = try fileBytes(Self.dir + "/multitile_1024x768.jpg")
        let (rows, n) = try runner.embed(.image(jpeg: jpeg))
        #expect(n == 1770)   // 3x2 tiles of 256 rows and a 576x416 thumbnail (234)
        #expect(rows.count == n * 64)
        let small = try fileBytes(Self.dir + "/e2e_photo_100x60.jpg")
        #expect(try runner.embed(.image(jpeg: small)).count == 77)
        // A second image, the same image again in another turn: rows come from the KV cache.
        let conv = runner.createConversation()
        var o = GenerationOptions()
        o.temperature = 0
        o.maxTokens = 2
        _ = try collectAll(try conv.generate(ChatMessage(role: .user, content: [.image(jpeg: small), .text("Hi")]), options: o))
        let second = try collectAll(try conv.generate(ChatMessage(role: .user, content: [.image(jpeg: small), .text("And this?")]), options: o))
        #expect(second.cachedPromptTokens > 77)
    }

    @Test func badImagesAreRefusedWithTheirCause() throws {
        let runner = try Self.runner()
        let conv = runner.createConversation()
        let cases: [(String, LeapError.Kind, String)] = [
            ("bad_truncated.jpg", .format, "corrupt"), ("bad_is_png.jpg", .unsupported, "PNG"),
            ("bad_sof_65500x65500.jpg", .unsupported, "65500x65500"),
        ]
        let imagesDir = fixturesRoot + "/images"
        for (name, kind, word) in cases {
            let data = try fileBytes(imagesDir + "/" + name)
            do {
                _ = try conv.generate(ChatMessage(role: .user, content: [.image(jpeg: data)]), options: GenerationOptions())
                Issue.record("\(name) accepted")
            } catch let e as LeapError {
                #expect(e.kind == kind, "\(name): \(e)")
                #expect(e.message.hasPrefix("history[0].content[0]: "), "\(e.message)")
                #expect(e.message.contains(word), "\(e.message)")
            }
        }
        #expect(conv.history.isEmpty)
    }

    private func collectAll(_ g: Generation) throws -> GenerationStats {
        var stats: GenerationStats?
        while let e = try g.next() { if case .complete(_, _, let s) = e { stats = s } }
        return try #require(stats)
    }
}
