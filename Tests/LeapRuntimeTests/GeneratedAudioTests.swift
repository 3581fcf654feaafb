import LeapAudio
import LeapCore
import LeapJSON
import LeapMessages
import LeapRuntime
import LeapRuntimeTestSupport
import Testing

/// Audio output (LEAP §2.7-2.8) on a scripted model that speaks while it writes: chunks stream in order
/// with the text, the turn's samples follow the text part of the assistant message, and a broken stream
/// of audio fails the turn.
@Suite struct GeneratedAudioTests {
    /// "Hello" speaks a, "there" speaks b then c (script indices 0 and 2).
    let a = AudioChunk(samples: [0.5, -0.5, 0.25])
    let b = AudioChunk(samples: [0.125])
    let c = AudioChunk(samples: [-1, 1, 0.1, -0.3])

    func events(_ events: [GenerationEvent]) -> [String] {
        events.map { e in
            switch e {
            case .chunk(let t): return "text:" + t
            case .reasoningChunk(let t): return "reasoning:" + t
            case .functionCalls: return "calls"
            case .token(let t): return "token:\(t.id)"
            case .audioSample(let s, let r): return "audio:\(s.count)@\(r)"
            case .complete(_, let r, _): return "complete:" + r.name
            }
        }
    }

    @Test func audioStreamsInOrderWithTextAndEndsUpInTheMessage() throws {
        let (runner, _, _) = makeScriptedRunner(script: ["Hello", " ", "there", "<|im_end|>"], audio: [0: [a], 2: [b, c]])
        let conv = runner.createConversation()
        let (_, evs) = try collect(try conv.generate(ChatMessage(role: .user, text: "Hi"), options: greedy))
        #expect(events(evs) == ["text:Hello", "audio:3@24000", "text: ", "text:there", "audio:1@24000", "audio:4@24000",
                                "complete:STOP"])
        let streamed = evs.flatMap { e -> [Float] in if case .audioSample(let s, _) = e { return s } else { return [] } }
        #expect(streamed == a.samples + b.samples + c.samples)
        let (message, _, _) = try #require(completion(evs))
        let expected = ChatMessage(role: .assistant, content: [
            .text("Hello there"), .audioPCMF32(samples: a.samples + b.samples + c.samples, sampleRate: 24_000)])
        #expect(message == expected)
        #expect(conv.history.last == expected)
        // The history, audio included, survives its JSON form exactly.
        let json = conv.exportJSON()
        #expect(try ChatHistoryJSON.decode(json) == conv.history)
        #expect(json.contains(#""type":"audio_pcm_f32""#))
    }

    @Test func aTurnWithAudioInTheHistoryCanBeContinued() throws {
        let (runner, _, _) = makeScriptedRunner(script: ["Hello", "<|im_end|>", "Fine", "<|im_end|>"], audio: [0: [a]])
        let conv = runner.createConversation()
        _ = try collect(try conv.generate(ChatMessage(role: .user, text: "Hi"), options: greedy))
        // Generated audio in an assistant message is replayed as its text (the template gets a plain
        // string), not rejected as input audio.
        let textOnly = conv.history.map { ChatMessage(role: $0.role, text: $0.text) }
        #expect(conv.history.last?.content.count == 2)
        #expect(try runner.promptTokenCount(messages: conv.history) == runner.promptTokenCount(messages: textOnly))
        let (text, evs) = try collect(try conv.generate(ChatMessage(role: .user, text: "How are you?"), options: greedy))
        #expect(text == "Fine")
        #expect(completion(evs)?.0 == ChatMessage(role: .assistant, text: "Fine"))  // no audio this turn: no audio part
        // A conversation created from that history continues the same way.
        let (runner2, _, _) = makeScriptedRunner(script: ["Fine", "<|im_end|>"])
        let fresh = try runner2.createConversation(history: try ChatHistoryJSON.decode(conv.exportJSON()).prefix(2).map { $0 })
        #expect(try collect(try fresh.generate(ChatMessage(role: .user, text: "How are you?"), options: greedy)).text == "Fine")
    }

    @Test func stoppingOnAudioEndsTheTurnWithinOneTokenAndKeepsTheAudioSoFar() throws {
        let (runner, _, _) = makeScriptedRunner(script: ["Hello", " ", "there", "!", "<|im_end|>"], audio: [0: [a], 1: [b], 2: [c]])
        let conv = runner.createConversation()
        let g = try conv.generate(ChatMessage(role: .user, text: "Hi"), options: greedy)
        var seen: [GenerationEvent] = []
        while let e = try g.next() {
            seen.append(e)
            if case .audioSample = e { conv.stop() }
        }
        #expect(events(seen) == ["text:Hello", "audio:3@24000", "complete:INTERRUPTED"])
        #expect(completion(seen)?.0.content == [.text("Hello"), .audioPCMF32(samples: a.samples, sampleRate: 24_000)])
        #expect(conv.history.count == 2)
    }

    @Test func aSampleRateChangeWithinATurnFailsIt() throws {
        let other = AudioChunk(samples: [0.5], sampleRate: 16_000)
        let (runner, _, _) = makeScriptedRunner(script: ["Hello", " ", "there", "<|im_end|>"], audio: [0: [a], 2: [other]])
        let conv = runner.createConversation()
        let g = try conv.generate(ChatMessage(role: .user, text: "Hi"), options: greedy)
        var seen: [GenerationEvent] = []
        do {
            while let e = try g.next() { seen.append(e) }
            Issue.record("no error")
        } catch let e as LeapError {
            #expect(e.kind == .generation)
            #expect(e.message == "generated audio: audio chunk 1 has sample rate 16000 Hz, but this turn's audio is 24000 Hz")
        }
        #expect(events(seen) == ["text:Hello", "audio:3@24000", "text: ", "text:there"])
        #expect(!conv.isGenerating)
        #expect(conv.history.map(\.role) == [.user])  // a failed turn adds no assistant message
        #expect(try g.next() == nil)
    }

    @Test func nonFiniteSamplesFailTheTurn() throws {
        let (runner, _, _) = makeScriptedRunner(script: ["Hello", "<|im_end|>"], audio: [0: [AudioChunk(samples: [0, .nan])]])
        let conv = runner.createConversation()
        #expect(throws: LeapError(.generation, "generated audio: audio chunk 0 sample 1 is not finite")) {
            _ = try collect(try conv.generate(ChatMessage(role: .user, text: "Hi"), options: greedy))
        }
    }
}
