import LeapCore
import LeapJSON
import LeapMessages
import LeapToolCalls
import Testing

@Suite struct ChatTemplateInputsTests {
    let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0]

    @Test func messagesAndTools() throws {
        let history = [
            ChatMessage(role: .system, text: "Be brief."),
            ChatMessage(role: .user, content: [.text("What is this? "), .image(jpeg: jpeg), .audioPCMF32(samples: [0], sampleRate: 16000)]),
            ChatMessage(role: .assistant, content: [.text("Checking.")], reasoningContent: "Need weather.", functionCalls: lfmCalls),
            ChatMessage(role: .tool, text: "{\"temp\": 21}"),
            ChatMessage(role: .assistant, content: []),
        ]
        let inputs = try ChatTemplateInputs.build(messages: history, functions: [weatherFunction], parser: LFMFunctionCallParser())
        #expect(inputs.messages.map { $0.serialized() } == [
            #"{"role":"system","content":"Be brief."}"#,
            #"{"role":"user","content":[{"type":"text","text":"What is this? "},{"type":"image"},{"type":"audio"}]}"#,
            #"{"role":"assistant","content":"Checking.","tool_calls":[{"type":"function","function":{"name":"get_weather","arguments":{"city":"Paris"}}},{"type":"function","function":{"name":"now","arguments":{}}}],"reasoning_content":"Need weather.","thinking":"Need weather."}"#,
            #"{"role":"tool","content":"{\"temp\": 21}"}"#,
            #"{"role":"assistant","content":""}"#,
        ])
        #expect(inputs.tools.map { $0.serialized() } == [weatherToolJSON])
    }

    /// LEAP 8.11: calls on a non-assistant message are written into its text with the parser's dump.
    @Test func callsOnNonAssistantMessagesAreDumped() throws {
        let m = ChatMessage(role: .user, content: [.text(" please")], functionCalls: [call("now")])
        let lfm = try ChatTemplateInputs.build(messages: [m], functions: [], parser: LFMFunctionCallParser())
        #expect(lfm.messages[0]["content"] == .string("<|tool_call_start|>[now()]<|tool_call_end|> please"))
        #expect(lfm.messages[0]["tool_calls"] == nil)
        let hermes = try ChatTemplateInputs.build(messages: [m], functions: [], parser: HermesFunctionCallParser())
        #expect(hermes.messages[0]["content"] == .string("<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call> please"))
        let e = thrownError { try ChatTemplateInputs.build(messages: [m], functions: [], parser: nil) }
        #expect(e?.kind == .functionCallParsing)
        #expect(e?.message.contains("history[0]: a user message carries function calls") == true)
    }

    /// Templates that ignore tool_calls (LFM2, LFM2.5-1.2B) get the calls inside the assistant text.
    @Test func inlineCallsForTemplatesWithoutToolCalls() throws {
        let m = ChatMessage(role: .assistant, content: [.text("Checking.")], functionCalls: [call("now")])
        let inputs = try ChatTemplateInputs.build(messages: [m], functions: [], parser: LFMFunctionCallParser(), templateRendersToolCalls: false)
        #expect(inputs.messages[0].serialized() == #"{"role":"assistant","content":"Checking.<|tool_call_start|>[now()]<|tool_call_end|>"}"#)
        #expect(ChatTemplateInputs.templateRendersToolCalls(source: "{% for tool_call in message.tool_calls %}"))
        #expect(!ChatTemplateInputs.templateRendersToolCalls(source: "{{ message['content'] }}"))
    }
}
