import LeapCore
import LeapMessages
import LeapRuntime
import LeapRuntimeTestSupport
import Testing

/// The scripted session of a runner's first conversation.
private func session(_ model: ScriptedModel) throws -> ScriptedSession { try #require(model.sessions.first) }

private func image(_ bytes: [UInt8]) -> ChatMessageContent { .image(jpeg: bytes) }

@Suite struct MediaPromptTests {
    @Test func imageRowsStandWhereTheMessagePutsThemWithTheirMarkers() throws {
        let media = ScriptedMediaEncoder()
        let (runner, model, tok) = makeScriptedRunner(script: ["Hi", "<|im_end|>"], media: media)
        let conv = runner.createConversation()
        let msg = ChatMessage(role: .user, content: [.text("How"), image([7, 1, 1, 1]), .text("?")])  // 4 bytes: 3 rows
        _ = try collect(try conv.generate(msg, options: greedy))
        let s = try session(model)
        let ids = ["<|im_start|>", "user", "\n", "How", "<img>"].map(tok.id)
        #expect(Array(s.tokens.prefix(5)) == ids)
        #expect(Array(s.tokens[5..<8]) == [-1, -1, -1])
        #expect(Array(s.tokens[8..<10]) == ["</img>", "?"].map(tok.id))
        #expect(s.embedded == [[7, 0, 0, 1, 7, 1, 0, 1, 7, 2, 0, 1]])
        #expect(media.encodeCount == 1)
    }

    @Test func anImageAlreadyInTheCacheIsNotEncodedAgain() throws {
        let media = ScriptedMediaEncoder()
        let (runner, model, _) = makeScriptedRunner(script: ["Hi", "<|im_end|>", "Fine", "<|im_end|>"], media: media)
        let conv = runner.createConversation()
        _ = try collect(try conv.generate(ChatMessage(role: .user, content: [image([9, 9]), .text("Hi")]), options: greedy))
        let (_, events) = try collect(try conv.generate(ChatMessage(role: .user, text: "How are you?"), options: greedy))
        let (_, _, stats) = try #require(completion(events))
        #expect(media.encodeCount == 1)
        #expect(try session(model).embedded.count == 1)
        // The second turn's prompt re-used the first one's positions, image rows included.
        #expect(stats.cachedPromptTokens > 6)
    }

    @Test func theSameImageInTwoPlacesIsEncodedOnceAndEvaluatedTwice() throws {
        let media = ScriptedMediaEncoder()
        let (runner, model, _) = makeScriptedRunner(script: ["Hi", "<|im_end|>"], media: media)
        let conv = runner.createConversation()
        let msg = ChatMessage(role: .user, content: [image([5, 0]), .text("Hi"), image([5, 0]), image([6, 0, 0])])
        _ = try collect(try conv.generate(msg, options: greedy))
        let s = try session(model)
        #expect(media.encodeCount == 2)
        #expect(s.embedded.map { $0.first } == [5, 5, 6])
        #expect(s.embedded.map { $0.count / 4 } == [4, 4, 2])
    }

    @Test func audioRowsHaveNoMarkers() throws {
        let media = ScriptedMediaEncoder()
        let (runner, model, tok) = makeScriptedRunner(script: ["Hi", "<|im_end|>"], media: media)
        let conv = runner.createConversation(systemPrompt: "Be brief.")
        _ = try collect(try conv.generate(ChatMessage(role: .user, content: [.audioPCMF32(samples: [0.5, 0, 0], sampleRate: 16000)]), options: greedy))
        let s = try session(model)
        let head = ["<|im_start|>", "system", "\n", "Be", " ", "brief", ".", "<|im_end|>", "\n", "<|im_start|>", "user", "\n"].map(tok.id)
        #expect(Array(s.tokens.prefix(head.count)) == head)
        #expect(Array(s.tokens[head.count..<head.count + 4]) == [-1, -1, -1, -1])
        #expect(s.tokens[head.count + 4] == tok.id("<|im_end|>"))
    }

    @Test func aRefusedTurnLeavesTheConversationAsItWas() throws {
        let (runner, model, _) = makeScriptedRunner(script: ["Hi", "<|im_end|>", "Fine", "<|im_end|>"])  // a text model
        let conv = runner.createConversation(systemPrompt: "Be brief.")
        _ = try collect(try conv.generate(ChatMessage(role: .user, text: "Hi"), options: greedy))
        let before = conv.history
        let evaluations = try session(model).evaluated.count
        #expect(throws: LeapError.self) {
            _ = try conv.generate(ChatMessage(role: .user, content: [.text("What is it?"), image([1, 2, 3])]), options: greedy)
        }
        do {
            _ = try conv.generate(ChatMessage(role: .user, content: [image([1, 2, 3])]), options: greedy)
        } catch let e as LeapError {
            #expect(e.kind == .unsupported)
            #expect(e.message.contains("history[3].content[0]: an image part needs a vision encoder"), "\(e.message)")
        }
        #expect(conv.history == before)
        #expect(!conv.isGenerating)
        #expect(try session(model).evaluated.count == evaluations)
        // The next turn works as if nothing happened.
        let (text, _) = try collect(try conv.generate(ChatMessage(role: .user, text: "How are you?"), options: greedy))
        #expect(text == "Fine")
        #expect(conv.history.count == before.count + 2)
    }

    @Test func corruptMediaAndPromptsTooLongAreRefusedBeforeTheHistory() throws {
        let media = ScriptedMediaEncoder(images: true, audio: false)
        let (runner, _, _) = makeScriptedRunner(script: ["Hi", "<|im_end|>"], contextSize: 24, media: media)
        let conv = runner.createConversation()
        func refused(_ m: ChatMessage, _ kind: LeapError.Kind, _ fragment: String) {
            do {
                _ = try conv.generate(m, options: greedy)
                Issue.record("accepted \(m)")
            } catch let e as LeapError {
                #expect(e.kind == kind)
                #expect(e.message.contains(fragment), "\(e.message)")
            } catch { Issue.record("\(error)") }
            #expect(conv.history.isEmpty)
            #expect(!conv.isGenerating)
        }
        refused(ChatMessage(role: .user, content: [image(Array("BAD".utf8))]), .format, "history[0].content[0]: not a JPEG")
        refused(ChatMessage(role: .user, content: [.audio(wav: [1, 2])]), .unsupported, "an audio part needs an audio encoder; the projector of this model is a vision encoder")
        refused(ChatMessage(role: .user, text: String(repeating: "Hi ", count: 20)), .promptExceedsContext, "exceeds the max context length")
        #expect(throws: LeapError.self) { try conv.append(ChatMessage(role: .user, content: [image(Array("BADX".utf8))])) }
        #expect(conv.history.isEmpty)
        #expect(media.encodeCount == 0)
    }

    @Test func importedHistoriesAreCheckedWhenTheyAreImported() throws {
        let (textRunner, _, _) = makeScriptedRunner(script: ["Hi", "<|im_end|>"])
        let history = [ChatMessage(role: .user, content: [image([3, 3])]), ChatMessage(role: .assistant, text: "Hi")]
        #expect(throws: LeapError.self) { _ = try textRunner.createConversation(history: history) }
        let media = ScriptedMediaEncoder()
        let (runner, model, _) = makeScriptedRunner(script: ["Hi", "<|im_end|>"], media: media)
        let conv = try runner.createConversation(history: history)
        _ = try collect(try conv.generate(ChatMessage(role: .user, text: "How are you?"), options: greedy))
        #expect(try session(model).embedded == [[3, 0, 0, 1, 3, 1, 0, 1, 3, 2, 0, 1, 3, 3, 0, 1]])
        // Generated audio in an assistant message is not input: a text model takes such a history.
        let spoken = [ChatMessage(role: .assistant, content: [.text("Hi"), .audioPCMF32(samples: [0.1], sampleRate: 24000)])]
        _ = try textRunner.createConversation(history: spoken)
    }
}
