import LeapAudio
import LeapCore
import LeapJSON
import LeapMessages
import Testing

private let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46, 0x49, 0x46, 0x00, 0xFF, 0xD9]
private let wav = try! encodeWAV([0, 0.5, -0.5, 1], channels: 1, sampleRate: 16000, encoding: .float32LEAP)

@Suite struct MessageJSONTests {
    /// Decoding the canonical JSON of a message and encoding it again gives the same text, for messages
    /// with every kind of part, reasoning, tool calls and non-ASCII text.
    @Test(arguments: [
        ChatMessage(role: .user, text: "Hello, wörld! 你好 😀 \"quoted\"\n\\"),
        ChatMessage(role: .system, content: []),
        ChatMessage(role: .user, content: [.text("What is this?"), .image(jpeg: jpeg), .audio(wav: wav),
                                           .audioPCMF32(samples: [0, 0.25, -1, 1e-7], sampleRate: 24000)]),
        ChatMessage(role: .assistant, content: [.text("Let me check.")], reasoningContent: "The user wants weather.",
                    functionCalls: [
                        LeapFunctionCall(name: "get_weather", arguments: JSONObject([("city", .string("Paris")), ("days", .int(3))])),
                        LeapFunctionCall(name: "now"),
                    ]),
        ChatMessage(role: .tool, text: #"{"temperature": 21.5}"#),
    ])
    func roundTrip(message: ChatMessage) throws {
        let json = message.toJSONString()
        let decoded = try ChatMessage.fromJSON(json)
        #expect(decoded == message)
        #expect(decoded.toJSONString() == json)
    }

    @Test func wireShapeMatchesLEAP() throws {
        let m = ChatMessage(role: .assistant, content: [.text("hi"), .image(jpeg: jpeg)], reasoningContent: "r",
                            functionCalls: [LeapFunctionCall(name: "f", arguments: JSONObject([("a", .int(1))]))])
        let v = try JSONParser.parse(m.toJSONString())
        #expect(v["role"] == .string("assistant"))
        #expect(v["content"]?.arrayValue?[0] == .object(JSONObject([("type", .string("text")), ("text", .string("hi"))])))
        #expect(v["content"]?.arrayValue?[1]["image_url"]?["url"]?.stringValue == "data:image/jpeg;base64,/9j/4AAQSkZJRgD/2Q==")
        #expect(v["reasoning_content"] == .string("r"))
        let call = try #require(v["tool_calls"]?.arrayValue?.first)
        #expect(call["id"] == .string("call_0") && call["index"] == .int(0) && call["type"] == .string("function"))
        #expect(call["function"]?["arguments"] == .object(JSONObject([("a", .int(1))])))
    }

    @Test func acceptsOpenAIVariants() throws {
        let m = try ChatMessage.fromJSON(#"{"role":"assistant","content":"plain text","reasoning_content":"","tool_calls":[{"id":"x","type":"function","function":{"name":"f","arguments":"{\"k\":[1,2]}"}}],"name":"ignored"}"#)
        #expect(m.content == [.text("plain text")])
        #expect(m.reasoningContent == nil)
        #expect(m.functionCalls == [LeapFunctionCall(name: "f", arguments: JSONObject([("k", .array([.int(1), .int(2)]))]))])
        let a = try ChatMessage.fromJSON(#"{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"\#(Base64.encode(wav))"}}]}"#)
        #expect(a.content == [.audio(wav: wav)])
    }

    @Test(arguments: [
        (#"{"content":"x"}"#, "message.role: missing field"),
        (#"{"role":"robot","content":"x"}"#, "message.role: unknown role \"robot\""),
        (#"{"role":"user"}"#, "message.content: missing field"),
        (#"{"role":"user","content":5}"#, "message.content: expected a string or an array of parts, found a number"),
        (#"{"role":"user","content":[{"type":"video"}]}"#, "message.content[0].type: unknown content type \"video\""),
        (#"{"role":"user","content":[{"text":"x"}]}"#, "message.content[0].type: missing field"),
        (#"{"role":"user","content":[{"type":"image_url","image_url":"data:image/jpeg;base64,/9j/"}]}"#, "message.content[0].image_url: expected an object"),
        (#"{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.jpg"}}]}"#, "only data:image/jpeg;base64 URLs"),
        (#"{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,iVBORw0KGgo="}}]}"#, "image is not JPEG (PNG data)"),
        // U+037E is canonically ";" (Swift's hasPrefix would take it for one), yet another character.
        (#"{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/2wBD"}}]}"#, "only data:image/jpeg;base64 URLs"),
        (#"{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/*"}}]}"#, "invalid base64 character '*' at offset 4"),
        (#"{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"SUQz","format":"mp3"}}]}"#, "only \"wav\" audio is supported, got \"mp3\""),
        (#"{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"SUQzBAAAAAAAI1RTU0U="}}]}"#, "message.content[0].input_audio.data: unsupported audio format: MP3"),
        (#"{"role":"user","content":[{"type":"audio_pcm_f32","samples":[0.1,"x"],"sampleRate":16000}]}"#, "message.content[0].samples[1]: expected a number"),
        (#"{"role":"user","content":[{"type":"audio_pcm_f32","samples":[],"sampleRate":0}]}"#, "sampleRate: expected a positive integer"),
        (#"{"role":"user","content":[{"type":"audio_pcm_f32","samples":[5.5,-1e100],"sampleRate":16000}]}"#, "message.content[0].samples[1]: -1e+100 is not a finite 32-bit float sample"),
        (#"{"role":"assistant","content":[],"tool_calls":[{"type":"function"}]}"#, "message.tool_calls[0].function: missing field"),
        (#"{"role":"assistant","content":[],"tool_calls":[{"function":{"name":"f","arguments":"[1]"}}]}"#, "arguments: expected a JSON object, found an array"),
        (#"{"role":"assistant","content":[],"tool_calls":[{"function":{"name":"f","arguments":"{bad"}}]}"#, "message.tool_calls[0].function.arguments: invalid JSON"),
        (#"{"role":"user","content":"x""#, "invalid JSON at line 1, column 29"),
        (#"[1]"#, "message: expected an object, found an array"),
    ])
    func rejectsBadInputNamingTheField(json: String, expected: String) {
        do {
            _ = try ChatMessage.fromJSON(json)
            Issue.record("accepted \(json)")
        } catch let e as LeapError {
            #expect(e.kind == .serialization)
            #expect(e.message.contains(expected), "message was: \(e.message)")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func historyRoundTrip() throws {
        let h = [ChatMessage(role: .system, text: "Be brief."), ChatMessage(role: .user, text: "Hi"), ChatMessage(role: .assistant, text: "Hello!")]
        #expect(try ChatHistoryJSON.decode(ChatHistoryJSON.encode(h)) == h)
        #expect(throws: LeapError.self) { try ChatHistoryJSON.decode(#"{"role":"user"}"#) }
    }
}

@Suite struct Base64Tests {
    /// RFC 4648 section 10 test vectors.
    @Test(arguments: [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")])
    func rfcVectors(plain: String, encoded: String) throws {
        #expect(Base64.encode(Array(plain.utf8)) == encoded)
        #expect(try Base64.decode(encoded, field: "x") == Array(plain.utf8))
    }

    @Test func allBytesRoundTripAndUnpaddedInput() throws {
        let all = (0..<256).map { UInt8($0) } + [1, 2]
        #expect(try Base64.decode(Base64.encode(all), field: "x") == all)
        #expect(try Base64.decode("Zm9vYg", field: "x") == Array("foob".utf8))
        #expect(throws: LeapError.self) { try Base64.decode("Zm9vY", field: "x") }
        #expect(throws: LeapError.self) { try Base64.decode("Zm 9v", field: "x") }
        #expect(throws: LeapError.self) { try Base64.decode("Zg===", field: "x") }
    }
}
