import CLeap
import LeapCAPI
import LeapRuntime
import LeapRuntimeTestSupport
import Testing

/// `unparsed_function_calls_as_text` through the C API, on a scripted model that writes a call that does
/// not parse (`[get_weather(city=)]`, markers as special tokens): by default the generation fails with
/// LEAP_ERR_FUNCTION_CALL_PARSING; with the option the turn completes with the call's text as content.
@Suite struct UnparsedCallsCAPITests {
    let script = ["Hi", "<|tool_call_start|>", "[get_weather(", "city=", ")]", "<|tool_call_end|>", "<|im_end|>"]

    /// The streamed text, the complete message's text, and the status that ended the generation.
    func generate(asText: Int32?) throws -> (chunks: String, content: String?, status: leap_status) {
        let model = retainedModelHandle(makeScriptedRunner(script: script).0)
        defer { leap_model_free(model) }
        var conv: OpaquePointer?
        #expect(leap_conversation_create(model, nil, &conv) == LEAP_OK)
        defer { leap_conversation_free(conv) }
        var message: OpaquePointer?
        #expect(leap_message_create(LEAP_ROLE_USER, &message) == LEAP_OK)
        defer { leap_message_free(message) }
        #expect(leap_message_add_text(message, "Weather?") == LEAP_OK)
        var o = leap_generation_options()
        leap_generation_options_init(&o, MemoryLayout<leap_generation_options>.size)
        #expect(o.unparsed_function_calls_as_text == 0)
        o.temperature = 0
        if let asText { o.unparsed_function_calls_as_text = asText }
        var g: OpaquePointer?
        #expect(leap_conversation_generate_begin(conv, message, &o, &g) == LEAP_OK)
        defer { leap_generation_free(g) }
        var chunks = ""
        var content: String?
        while true {
            var e = leap_event()
            e.struct_size = UInt32(MemoryLayout<leap_event>.size)
            let status = leap_generation_next(g, &e)
            if status != LEAP_OK { return (chunks, content, status) }
            switch e.kind {
            case Int32(LEAP_EVENT_NONE.rawValue): return (chunks, content, status)
            case Int32(LEAP_EVENT_CHUNK.rawValue): chunks += String(cString: e.text)
            case Int32(LEAP_EVENT_COMPLETE.rawValue):
                var text: UnsafeMutablePointer<CChar>?
                #expect(leap_message_part_text(e.message, 0, &text) == LEAP_OK)
                content = text.map { String(cString: $0) }
                leap_string_free(text)
            default: break
            }
        }
    }

    @Test func defaultFailsTheTurn() throws {
        let (chunks, content, status) = try generate(asText: nil)
        #expect(status == LEAP_ERR_FUNCTION_CALL_PARSING)
        #expect(String(cString: leap_last_error()).contains("expected a value, found ')' in: [get_weather(city=)]"))
        #expect(chunks == "Hi")
        #expect(content == nil)
    }

    @Test func optionKeepsTheCallAsText() throws {
        let (chunks, content, status) = try generate(asText: 1)
        #expect(status == LEAP_OK)
        #expect(chunks == "Hi[get_weather(city=)]")
        #expect(content == "Hi[get_weather(city=)]")
    }
}
