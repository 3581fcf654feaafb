import Glibc
import LeapCore
import LeapJSON
import LeapMessages
import LeapRuntime
import LeapRuntimeTestSupport
import Testing

func makeRunner(script: [String], contextSize: Int = 256) -> (ModelRunner, ScriptedModel, ScriptedTokenizer) {
    makeScriptedRunner(script: script, contextSize: contextSize)
}

var greedy: GenerationOptions {
    var o = GenerationOptions()
    o.temperature = 0
    o.repetitionPenalty = 1
    return o
}

func collect(_ g: Generation) throws -> (text: String, events: [GenerationEvent]) {
    var text = ""
    var events: [GenerationEvent] = []
    while let e = try g.next() {
        if case .chunk(let c) = e { text += c }
        events.append(e)
    }
    return (text, events)
}

func completion(_ events: [GenerationEvent]) -> (ChatMessage, GenerationFinishReason, GenerationStats)? {
    guard case .complete(let m, let r, let s)? = events.last else { return nil }
    return (m, r, s)
}

@Suite struct ConversationTests {
    @Test func generatesUntilEndOfTurnAndRecordsHistory() throws {
        let (runner, _, _) = makeRunner(script: ["Hello", " ", "there", "!", "<|im_end|>"])
        let conv = runner.createConversation(systemPrompt: "Be brief.")
        let (text, events) = try collect(try conv.generate(ChatMessage(role: .user, text: "Hi"), options: greedy))
        #expect(text == "Hello there!")
        let (message, reason, stats) = try #require(completion(events))
        #expect(reason == .stop)
        #expect(message == ChatMessage(role: .assistant, text: "Hello there!"))
        #expect(stats.completionTokens == 4)
        #expect(conv.history.map(\.role) == [.system, .user, .assistant])
        #expect(!conv.isGenerating)
    }

    @Test func multiByteCharacterSplitAcrossTokensArrivesWhole() throws {
        let (runner, _, _) = makeRunner(script: ["caf", "\u{C3}", "\u{A9}", "!", "<|im_end|>"])
        let conv = runner.createConversation()
        let (_, events) = try collect(try conv.generate(ChatMessage(role: .user, text: "Hi"), options: greedy))
        let chunks = events.compactMap { e -> String? in if case .chunk(let c) = e { return c } else { return nil } }
        #expect(chunks == ["caf", "é", "!"])
    }

    @Test func maxTokensEndsTheTurnAndKeepsThePartialMessage() throws {
        let (runner, _, _) = makeRunner(script: ["Hello", " ", "there", "!", "<|im_end|>"])
        let conv = runner.createConversation()
        var o = greedy
        o.maxTokens = 2
        let (text, events) = try collect(try conv.generate(ChatMessage(role: .user, text: "Hi"), options: o))
        #expect(text == "Hello ")
        #expect(completion(events)?.1 == .maxTokens)
        #expect(conv.history.last?.text == "Hello")  // the message text is trimmed
    }

    @Test func secondGenerationWhileBusyIsRejected() throws {
        let (runner, _, _) = makeRunner(script: ["Hello", "<|im_end|>"])
        let conv = runner.createConversation()
        let g = try conv.generate(ChatMessage(role: .user, text: "Hi"), options: greedy)
        #expect(conv.isGenerating)
        #expect(throws: LeapError(.busy, "the conversation is already generating; wait for it to complete or stop it")) {
            try conv.generate(ChatMessage(role: .user, text: "Hi"), options: greedy)
        }
        #expect(throws: LeapError.self) { try conv.append(ChatMessage(role: .user, text: "x")) }
        _ = try collect(g)
        #expect(!conv.isGenerating)
        _ = try collect(try conv.generate(ChatMessage(role: .user, text: "Hi"), options: greedy))
    }

    @Test func stopIsHonouredWithinOneToken() throws {
        let (runner, model, _) = makeRunner(script: ["Hello", " ", "there", "!", "Fine", ".", "<|im_end|>"])
        let conv = runner.createConversation()
        let g = try conv.generate(ChatMessage(role: .user, text: "Hi"), options: greedy)
        var chunks = 0
        var reason: GenerationFinishReason?
        while let e = try g.next() {
            if case .chunk = e {
                chunks += 1
                if chunks == 2 { conv.stop() }
            }
            if case .complete(_, let r, _) = e { reason = r }
        }
        #expect(reason == .interrupted)
        #expect(chunks == 2)
        #expect(conv.history.last?.text == "Hello")
        #expect(model.sessions.count == 1)
    }

    @Test func stopFromAnotherThread() throws {
        let (runner, model, _) = makeRunner(script: Array(repeating: "Hi", count: 200) + ["<|im_end|>"])
        let conv = runner.createConversation()
        let g = try conv.generate(ChatMessage(role: .user, text: "Hi"), options: greedy)
        _ = try g.next()  // prompt evaluated, first token out
        // Another thread stops the conversation after the 10th decoded token.
        let session = try #require(model.sessions.first)
        var decoded = 0
        session.onDecode = {
            decoded += 1
            if decoded == 10 {
                var thread = pthread_t()
                let box = Unmanaged.passRetained(conv)
                pthread_create(&thread, nil, { arg in
                    guard let arg else { return nil }
                    Unmanaged<Conversation>.fromOpaque(arg).takeRetainedValue().stop()
                    return nil
                }, box.toOpaque())
                pthread_join(thread, nil)
            }
        }
        let (_, events) = try collect(g)
        #expect(completion(events)?.1 == .interrupted)
        #expect((completion(events)?.2.completionTokens ?? 0) <= 12)
    }

    /// A stop issued once the conversation reports that it is generating always reaches that generation,
    /// even when it lands while `generate` is still setting up (before, the setup could clear it).
    @Test func aStopOnceGeneratingIsNeverLost() throws {
        final class Box: @unchecked Sendable {
            let conv: Conversation
            init(_ c: Conversation) { conv = c }
        }
        for _ in 0..<500 {
            let (runner, _, _) = makeRunner(script: ["Hello", "!", "<|im_end|>"])
            let conv = runner.createConversation()
            var thread = pthread_t()
            pthread_create(&thread, nil, { arg in
                guard let arg else { return nil }
                let conv = Unmanaged<Box>.fromOpaque(arg).takeRetainedValue().conv
                while !conv.isGenerating {}
                conv.stop()
                return nil
            }, Unmanaged.passRetained(Box(conv)).toOpaque())
            let g = try conv.generate(ChatMessage(role: .user, text: "Hi"), options: greedy)
            pthread_join(thread, nil)
            let (text, events) = try collect(g)
            #expect(completion(events)?.1 == .interrupted)
            #expect(text == "")
        }
    }

    /// A stop during a long prompt ends the turn as interrupted (not as an error) and keeps the part of the
    /// prompt already evaluated in the cache.
    @Test func aStopDuringThePromptCompletesAsInterrupted() throws {
        let (runner, model, _) = makeRunner(script: ["Hello", "<|im_end|>", "Fine", "<|im_end|>"])
        let conv = runner.createConversation()
        model.prefillChunk = 4
        model.onPrefillChunk = { conv.stop() }
        let (text, events) = try collect(try conv.generate(ChatMessage(role: .user, text: "How are you?"), options: greedy))
        #expect(text == "")
        let (message, reason, stats) = try #require(completion(events))
        #expect(reason == .interrupted)
        #expect(events.count == 1)
        #expect(stats.promptTokens == 4 && stats.cachedPromptTokens == 0 && stats.completionTokens == 0)
        #expect(conv.history == [ChatMessage(role: .user, text: "How are you?"), message])
        // The next turn reuses the four evaluated tokens.
        model.onPrefillChunk = nil
        let (_, next) = try collect(try conv.generate(ChatMessage(role: .user, text: "Hi"), options: greedy))
        #expect(completion(next)?.1 == .stop)
        #expect(completion(next)?.2.cachedPromptTokens == 4)
    }

    @Test func aStopWhileIdleDoesNotCarryOver() throws {
        let (runner, _, _) = makeRunner(script: ["Hello", "<|im_end|>", "Fine", "<|im_end|>"])
        let conv = runner.createConversation()
        conv.stop()
        let (_, first) = try collect(try conv.generate(ChatMessage(role: .user, text: "Hi"), options: greedy))
        #expect(completion(first)?.1 == .stop)
        conv.stop()  // after the turn completed: for nobody
        let (text, second) = try collect(try conv.generate(ChatMessage(role: .user, text: "How are you?"), options: greedy))
        #expect(completion(second)?.1 == .stop)
        #expect(text == "Fine")
    }

    @Test func secondTurnReusesTheCachedPrompt() throws {
        let (runner, model, _) = makeRunner(script: ["Hello", "!", "<|im_end|>", "Fine", ".", "<|im_end|>"])
        let conv = runner.createConversation(systemPrompt: "Be brief.")
        let (_, first) = try collect(try conv.generate(ChatMessage(role: .user, text: "Hi"), options: greedy))
        #expect(completion(first)?.2.cachedPromptTokens == 0)
        let (text, second) = try collect(try conv.generate(ChatMessage(role: .user, text: "How are you?"), options: greedy))
        #expect(text == "Fine.")
        let stats = try #require(completion(second)?.2)
        // Everything of turn one up to the generated "Hello!" is reused; only the new turn is evaluated.
        let prompt1 = try runner.promptTokenCount(messages: Array(conv.history.prefix(2)))
        #expect(stats.cachedPromptTokens == prompt1 + 2)
        #expect(model.sessions.count == 1)
        // A fresh conversation over the same history produces the same answer from an empty cache.
        let (runner2, _, _) = makeRunner(script: ["Fine", ".", "<|im_end|>"])
        let fresh = try runner2.createConversation(history: Array(conv.history.prefix(3)))
        let (text2, events2) = try collect(try fresh.generate(ChatMessage(role: .user, text: "How are you?"), options: greedy))
        #expect(text2 == text)
        #expect(completion(events2)?.2.cachedPromptTokens == 0)
        #expect(completion(events2)?.2.promptTokens == stats.promptTokens + stats.cachedPromptTokens)
    }

    @Test func promptLongerThanTheContextIsAnError() throws {
        let (runner, _, _) = makeRunner(script: ["Hi", "<|im_end|>"], contextSize: 8)
        let conv = runner.createConversation(systemPrompt: "Be brief.")
        do {
            _ = try conv.generate(ChatMessage(role: .user, text: "How are you?"), options: greedy)
            Issue.record("no error")
        } catch let e as LeapError {
            #expect(e.kind == .promptExceedsContext)
            #expect(e.message.hasPrefix("The prompt exceeds the max context length of 8 tokens"))
        }
        #expect(!conv.isGenerating)
        #expect(conv.history.map(\.role) == [.system])  // the refused message never entered the history
    }

    @Test func templateRenderingNothingIsAnErrorNotATrap() throws {
        // Before the check, an empty prompt made the cache-reuse prefix -1 and sliced prompt[0..<-1].
        final class EmptyTemplate: ChatTemplateBackend {
            func render(messages: [JSONValue], tools: [JSONValue]?, addGenerationPrompt: Bool, variables: JSONObject) throws -> String { "" }
        }
        let (scripted, model, tok) = makeRunner(script: ["Hi", "<|im_end|>"])
        let runner = ModelRunner(modelId: "empty", model: model, tokenizer: tok, template: EmptyTemplate(),
                                 templateIsFallback: false, contextSize: scripted.contextSize)
        let conv = runner.createConversation()
        #expect(throws: LeapError.self) { _ = try conv.generate(ChatMessage(role: .user, text: "Hi"), options: greedy) }
        #expect(!conv.isGenerating)
        #expect(conv.history.isEmpty)  // a refused turn leaves the history as it was
    }

    @Test func contextFillingUpEndsWithExceedContext() throws {
        let (runner, _, _) = makeRunner(script: Array(repeating: "Hi", count: 50), contextSize: 20)
        let conv = runner.createConversation()
        let (_, events) = try collect(try conv.generate(ChatMessage(role: .user, text: "Hi"), options: greedy))
        #expect(completion(events)?.1 == .exceedContext)
    }

    @Test func schemaInjectionUsesLEAPsText() {
        let schema = #"{"type":"object"}"#
        let withSystem = PromptBuilder.injectSchema(schema, into: [ChatMessage(role: .system, text: "Be brief."), ChatMessage(role: .user, text: "Hi")])
        #expect(withSystem[0].text == "Be brief.\n\nFollow the JSON schema below for your response:\n" + schema)
        let without = PromptBuilder.injectSchema(schema, into: [ChatMessage(role: .user, text: "Hi")])
        #expect(without[0] == ChatMessage(role: .system, text: "Follow the JSON schema below for your response:\n" + schema))
        #expect(PromptBuilder.injectSchema(schema, into: withSystem) == withSystem)
    }

    @Test func toolCallsAreParsedAndNeverLeakIntoText() throws {
        let (runner, _, _) = makeRunner(script: ["Hi", "<|tool_call_start|>", "[get_weather(", "city=", "\"Paris\"", ")]",
                                                 "<|tool_call_end|>", "<|im_end|>"])
        let conv = runner.createConversation()
        let (text, events) = try collect(try conv.generate(ChatMessage(role: .user, text: "Weather?"), options: greedy))
        #expect(text == "Hi")
        let calls = events.compactMap { e -> [LeapFunctionCall]? in if case .functionCalls(let c) = e { return c } else { return nil } }
        let expected = [LeapFunctionCall(name: "get_weather", arguments: JSONObject([("city", .string("Paris"))]))]
        #expect(calls == [expected])
        #expect(completion(events)?.0.functionCalls == expected)
        #expect(conv.history.last?.functionCalls == expected)
    }

    @Test func malformedToolCallEndsTheGenerationWithAnError() throws {
        let (runner, _, _) = makeRunner(script: ["<|tool_call_start|>", "[get_weather(", "city=", "<|tool_call_end|>", "<|im_end|>"])
        let conv = runner.createConversation()
        let g = try conv.generate(ChatMessage(role: .user, text: "Weather?"), options: greedy)
        do {
            while try g.next() != nil {}
            Issue.record("no error")
        } catch let e as LeapError {
            #expect(e.kind == .functionCallParsing)
            #expect(e.message.contains("[get_weather(city="))
        }
        #expect(!conv.isGenerating)
        #expect(conv.history.map(\.role) == [.user])  // no assistant message after an error
    }

    /// A call written inside the reasoning, its markers special tokens, is reasoning text, not a call.
    @Test func toolCallMarkersInsideReasoningStayReasoning() throws {
        let (runner, _, _) = makeRunner(script: ["<think>", "hmm", " ", "<|tool_call_start|>", "[get_weather(", "city=", "\"Paris\"", ")]",
                                                 "<|tool_call_end|>", "</think>", "Hi", "<|im_end|>"])
        let (text, events) = try collect(try runner.createConversation().generate(ChatMessage(role: .user, text: "Hi"), options: greedy))
        #expect(text == "Hi")
        #expect(!events.contains { if case .functionCalls = $0 { return true } else { return false } })
        let message = completion(events)?.0
        #expect(message?.reasoningContent == "hmm <|tool_call_start|>[get_weather(city=\"Paris\")]<|tool_call_end|>")
        #expect(message?.functionCalls == nil)
    }

    @Test func reasoningIsRoutedSeparately() throws {
        let (runner, _, _) = makeRunner(script: ["<think>", "hmm", "</think>", "Hi", "<|im_end|>"])
        let conv = runner.createConversation()
        let (text, events) = try collect(try conv.generate(ChatMessage(role: .user, text: "Hi"), options: greedy))
        #expect(text == "Hi")
        #expect(events.contains { if case .reasoningChunk("hmm") = $0 { return true } else { return false } })
        #expect(completion(events)?.0.reasoningContent == "hmm")
        var inline = greedy
        inline.inlineThinkingTags = true
        let (runner2, _, _) = makeRunner(script: ["<think>", "hmm", "</think>", "Hi", "<|im_end|>"])
        let (text2, events2) = try collect(try runner2.createConversation().generate(ChatMessage(role: .user, text: "Hi"), options: inline))
        #expect(text2 == "<think>hmm</think>Hi")
        #expect(completion(events2)?.0.reasoningContent == "hmm")
    }

    /// The scripted model wants to write `{"ok":1,"ok":2}` (with `"Paris"` as its second choice of key);
    /// additional properties are allowed, but not the same key twice: the second `"ok"` is refused.
    @Test func constrainedObjectsNeverRepeatAKey() throws {
        let (runner, _, _) = makeRunner(script: ["{", "\"ok\"", ":", "1", ",", "\"ok\"", "\"Paris\"", ":", "2", "}", "<|im_end|>"])
        var o = greedy
        o.jsonSchemaConstraint = #"{"type":"object","additionalProperties":{"type":"integer"}}"#
        o.maxTokens = 60
        let conv = runner.createConversation()
        let (text, events) = try collect(try conv.generate(ChatMessage(role: .user, text: "Hi"), options: o))
        #expect(text == #"{"ok":1,"Paris":2}"#)
        #expect(completion(events)?.1 == .constraint)
        let value = try JSONParser.parse(text)  // rejects duplicate keys
        #expect(value.objectValue?["ok"] == .int(1))
    }

    /// The scripted model wants to say "Hello"; the constraint only lets a JSON boolean through.
    @Test func jsonSchemaConstraintMasksTokens() throws {
        let (runner, _, _) = makeRunner(script: ["Hello", "there", "<|im_end|>"])
        var o = greedy
        o.jsonSchemaConstraint = #"{"type":"boolean"}"#
        let conv = runner.createConversation()
        let (text, events) = try collect(try conv.generate(ChatMessage(role: .user, text: "Hi"), options: o))
        #expect(text == "true" || text == "false")
        #expect(completion(events)?.1 == .constraint)
        o.jsonSchemaConstraint = #"{"type":"object","properties":{"a":{"type":"nope"}}}"#
        #expect(throws: LeapError.self) { try conv.generate(ChatMessage(role: .user, text: "Hi"), options: o) }
        #expect(!conv.isGenerating)
    }
}
