import CLeap
import LeapAudio
import LeapCAPI
import LeapRuntime
import LeapRuntimeTestSupport
import Testing

/// Generated audio through the C API (callbacks and pull iterator), on a scripted model that speaks while
/// it writes: no weights of an audio model exist here, so the runner is scripted and wrapped in a
/// `leap_model` handle; everything after that is the public C entry points.
@Suite struct ConversationAudioTests {
    static let a: [Float] = [0.5, -0.5, 0.25]
    static let b: [Float] = [0.125]
    static let c: [Float] = [-1, 1, 0.1, -0.3]

    /// "Hello" speaks a, "there" speaks b then c (unless `audio` says otherwise).
    func conversation(_ audio: [Int: [AudioChunk]] = [0: [AudioChunk(samples: a)], 2: [AudioChunk(samples: b), AudioChunk(samples: c)]])
        throws -> (OpaquePointer, OpaquePointer) {
        let (runner, _, _) = makeScriptedRunner(script: ["Hello", " ", "there", "<|im_end|>"], audio: audio)
        let model = retainedModelHandle(runner)
        var conv: OpaquePointer?
        #expect(leap_conversation_create(model, nil, &conv) == LEAP_OK)
        return (model, try #require(conv))
    }

    func userMessage(_ text: String) throws -> OpaquePointer {
        var m: OpaquePointer?
        #expect(leap_message_create(LEAP_ROLE_USER, &m) == LEAP_OK)
        #expect(leap_message_add_text(m, text) == LEAP_OK)
        return try #require(m)
    }

    var greedy: leap_generation_options {
        var o = leap_generation_options()
        leap_generation_options_init(&o, MemoryLayout<leap_generation_options>.size)
        o.temperature = 0
        o.repetition_penalty = 1
        return o
    }

    /// What the callbacks saw, in order.
    final class Log {
        var events: [String] = []
        var samples: [Float] = []
        var stopOnAudio = false
        var reason: Int32 = -1
        var parts: [String] = []
        var messagePCM: [Float] = []
        var error = ""
    }

    func callbacks(_ log: Log) -> leap_generation_callbacks {
        var cb = leap_generation_callbacks()
        leap_generation_callbacks_init(&cb, MemoryLayout<leap_generation_callbacks>.size)
        cb.user_data = Unmanaged.passUnretained(log).toOpaque()
        cb.on_chunk = { text, n, ud in
            let log = Unmanaged<Log>.fromOpaque(ud!).takeUnretainedValue()
            log.events.append("text:" + String(cString: text!))
            return 0
        }
        cb.on_audio_sample = { samples, n, rate, ud in
            let log = Unmanaged<Log>.fromOpaque(ud!).takeUnretainedValue()
            log.events.append("audio:\(n)@\(rate)")
            log.samples += Array(UnsafeBufferPointer(start: samples, count: n))
            return log.stopOnAudio ? 1 : 0
        }
        cb.on_complete = { message, reason, _, ud in
            let log = Unmanaged<Log>.fromOpaque(ud!).takeUnretainedValue()
            log.events.append("complete")
            log.reason = Int32(bitPattern: reason.rawValue)
            var n = 0
            _ = leap_message_part_count(message, &n)
            for i in 0..<n {
                var type = leap_content_type(rawValue: 99)
                _ = leap_message_part_type(message, i, &type)
                log.parts.append(type == LEAP_CONTENT_TEXT ? "text" : type == LEAP_CONTENT_AUDIO_PCM_F32 ? "pcm" : "other")
                if type == LEAP_CONTENT_AUDIO_PCM_F32 {
                    var p: UnsafeMutablePointer<Float>?
                    var count = 0
                    var rate: Int32 = 0
                    _ = leap_message_part_pcm(message, i, &p, &count, &rate)
                    log.messagePCM = Array(UnsafeBufferPointer(start: p, count: count))
                    log.events.append("message-pcm@\(rate)")
                    leap_buffer_free(p)
                }
            }
        }
        cb.on_error = { status, message, ud in
            let log = Unmanaged<Log>.fromOpaque(ud!).takeUnretainedValue()
            log.error = "\(status.rawValue): " + String(cString: message!)
        }
        return cb
    }

    /// leap_conversation_generate of "Hi", greedy, with `log`'s callbacks.
    func generate(_ conv: OpaquePointer, _ log: Log) throws -> leap_status {
        let m = try userMessage("Hi")
        defer { leap_message_free(m) }
        var cb = callbacks(log)
        var o = greedy
        return leap_conversation_generate(conv, m, &o, &cb)
    }

    @Test func callbacksGetAudioInOrderWithTextAndTheMessageKeepsIt() throws {
        let (model, conv) = try conversation()
        defer { leap_conversation_free(conv); leap_model_free(model) }
        let log = Log()
        #expect(try generate(conv, log) == LEAP_OK)
        #expect(log.events == ["text:Hello", "audio:3@24000", "text: ", "text:there", "audio:1@24000", "audio:4@24000",
                               "complete", "message-pcm@24000"])
        #expect(log.samples == Self.a + Self.b + Self.c)
        #expect(log.parts == ["text", "pcm"])
        #expect(log.messagePCM == log.samples)
        #expect(log.reason == Int32(LEAP_FINISH_STOP.rawValue))
        // The history JSON carries the audio and round-trips through a new conversation.
        var json: UnsafeMutablePointer<CChar>?
        #expect(leap_conversation_history_json(conv, &json) == LEAP_OK)
        let text = String(cString: try #require(json))
        leap_string_free(json)
        #expect(text.contains(#"{"type":"audio_pcm_f32","samples":[0.5,-0.5,0.25,0.125,-1.0,1.0,"#))
        var copy: OpaquePointer?
        #expect(leap_conversation_create_from_history(model, text, &copy) == LEAP_OK)
        var again: UnsafeMutablePointer<CChar>?
        #expect(leap_conversation_history_json(copy, &again) == LEAP_OK)
        #expect(again.map { String(cString: $0) } == text)
        leap_string_free(again)
        leap_conversation_free(copy)
    }

    @Test func nonZeroFromTheAudioCallbackStopsWithinOneToken() throws {
        let (model, conv) = try conversation([0: [AudioChunk(samples: Self.a)], 1: [AudioChunk(samples: Self.b)]])
        defer { leap_conversation_free(conv); leap_model_free(model) }
        let log = Log()
        log.stopOnAudio = true
        #expect(try generate(conv, log) == LEAP_OK)
        #expect(log.events == ["text:Hello", "audio:3@24000", "complete", "message-pcm@24000"])
        #expect(log.reason == Int32(LEAP_FINISH_INTERRUPTED.rawValue))
        #expect(log.messagePCM == Self.a)
        var n = 0
        #expect(leap_conversation_message_count(conv, &n) == LEAP_OK && n == 2)
    }

    @Test func aSampleRateChangeIsAnErrorAfterTheEventsBeforeIt() throws {
        let (model, conv) = try conversation([0: [AudioChunk(samples: Self.a)], 2: [AudioChunk(samples: Self.b, sampleRate: 16_000)]])
        defer { leap_conversation_free(conv); leap_model_free(model) }
        let log = Log()
        #expect(try generate(conv, log) == LEAP_ERR_GENERATION)
        #expect(log.events == ["text:Hello", "audio:3@24000", "text: ", "text:there"])
        #expect(log.error == "\(LEAP_ERR_GENERATION.rawValue): generated audio: audio chunk 1 has sample rate 16000 Hz, but this turn's audio is 24000 Hz")
        var n = 0
        #expect(leap_conversation_message_count(conv, &n) == LEAP_OK && n == 1)  // no assistant message
        var busy: Int32 = 1
        #expect(leap_conversation_is_generating(conv, &busy) == LEAP_OK && busy == 0)
    }

    @Test func thePullIteratorDeliversAudioEvents() throws {
        let (model, conv) = try conversation()
        defer { leap_conversation_free(conv); leap_model_free(model) }
        let m = try userMessage("Hi")
        defer { leap_message_free(m) }
        var o = greedy
        var g: OpaquePointer?
        #expect(leap_conversation_generate_begin(conv, m, &o, &g) == LEAP_OK)
        var kinds: [Int32] = []
        var samples: [Float] = []
        var rates: Set<Int32> = []
        var parts = 0
        while true {
            var e = leap_event()
            e.struct_size = UInt32(MemoryLayout<leap_event>.size)
            #expect(leap_generation_next(g, &e) == LEAP_OK)
            if e.kind == Int32(LEAP_EVENT_NONE.rawValue) { break }
            kinds.append(e.kind)
            if e.kind == Int32(LEAP_EVENT_AUDIO_SAMPLE.rawValue) {
                samples += Array(UnsafeBufferPointer(start: e.samples, count: e.n_samples))
                rates.insert(e.sample_rate)
            }
            if e.kind == Int32(LEAP_EVENT_COMPLETE.rawValue) { _ = leap_message_part_count(e.message, &parts) }
        }
        leap_generation_free(g)
        let (chunk, audio, complete) = (Int32(LEAP_EVENT_CHUNK.rawValue), Int32(LEAP_EVENT_AUDIO_SAMPLE.rawValue),
                                        Int32(LEAP_EVENT_COMPLETE.rawValue))
        #expect(kinds == [chunk, audio, chunk, chunk, audio, audio, complete])
        #expect(samples == Self.a + Self.b + Self.c)
        #expect(rates == [24_000])
        #expect(parts == 2)
    }
}
