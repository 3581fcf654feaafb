import LeapChatTemplate
import LeapCore
import LeapJSON
import LeapMessages
import LeapTestFiles
import LeapToolCalls
import Testing

/// History -> ChatTemplateInputs -> the model's real chat template (Tests/Fixtures/templates/jinja) ->
/// the rendered assistant turn fed back through the response router as if the model had generated it:
/// the router must give back the same message. This is the multi-turn contract: what the router stores
/// is what the templates need to re-render the turn in the model's own format.
@Suite struct TemplateRoundTripTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var template: String
        var parser: FunctionCallParserKind
        var keepsReasoning: Bool
        var keepsContent = true
        var testDescription: String { template }
    }

    static let cases = [
        Case(template: "Qwen-Qwen3-0.6B.jinja", parser: .hermes, keepsReasoning: true),
        Case(template: "LFM2.5-8B-A1B.jinja", parser: .lfm, keepsReasoning: true),
        Case(template: "LFM2-8B-A1B.jinja", parser: .lfm, keepsReasoning: false),  // no tool_calls support: inlined
        Case(template: "LFM2.5-Instruct.jinja", parser: .lfm, keepsReasoning: false),
        // Hermes-3 renders only the calls of an assistant message that has calls (its text is dropped).
        Case(template: "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", parser: .hermes, keepsReasoning: false, keepsContent: false),
    ]

    @Test(arguments: cases)
    func assistantTurnSurvivesTheTemplate(_ c: Case) throws {
        let source = try #require(readText(fixturesDir("templates") + "/jinja/" + c.template), "missing template \(c.template)")
        let template = try ChatTemplate(source: source, fixedTime: 0)
        let calls = [call("get_weather", [("city", .string("Paris")), ("days", .int(3))]), call("now")]
        let assistant = ChatMessage(role: .assistant, content: [.text("Checking.")], reasoningContent: "Need weather.", functionCalls: calls)
        let history = [
            ChatMessage(role: .system, text: "Be brief."),
            ChatMessage(role: .user, text: "Weather in Paris?"),
            assistant,
            ChatMessage(role: .tool, text: "{\"temp\": 21}"),
        ]
        let parser = c.parser.parser
        let rendersCalls = ChatTemplateInputs.templateRendersToolCalls(source: source)
        // (Hermes-3's template recurses forever on a "null" type, in Python's jinja2 too: plain types only.)
        let function = LeapFunction(name: "get_weather", description: "Current weather.", parameters: [
            LeapFunctionParameter(name: "city", type: .string(), description: "City name"),
            LeapFunctionParameter(name: "unit", type: .string(enumValues: ["c", "f"]), description: "Temperature unit", optional: true),
            LeapFunctionParameter(name: "days", type: .integer(), description: "Days", optional: true),
        ])
        let inputs = try ChatTemplateInputs.build(messages: history, functions: [function], parser: parser,
                                                  templateRendersToolCalls: rendersCalls)
        let prompt = try template.render(messages: inputs.messages, tools: inputs.tools, addGenerationPrompt: true,
                                         bosToken: "<s>", eosToken: "</s>")
        // The tools reach the prompt.
        #expect(prompt.contains("get_weather") && prompt.contains("Temperature unit"))
        // The assistant turn as rendered (between its header and the end-of-turn token).
        let header = "<|im_start|>assistant\n"
        let bytes = Array(prompt.utf8)
        let start = try #require(find(Array(header.utf8), in: bytes, from: 0)) + header.utf8.count
        let end = try #require(find(Array("<|im_end|>".utf8), in: bytes, from: start))
        let turn = Array(bytes[start..<end])

        var router = ResponseStreamProcessor(options: ResponseStreamOptions(functionCallParser: parser))
        var events: [ResponseEvent] = []
        var i = 0
        while i < turn.count {  // 3-byte pieces: markers arrive split
            events += router.feed(Array(turn[i..<min(turn.count, i + 3)]), isSpecial: false)
            i += 3
        }
        let (tail, summary) = router.finish()
        events += tail
        #expect(summary.error == nil, "\(String(decoding: turn, as: UTF8.self))")
        #expect(summary.content == (c.keepsContent ? "Checking." : ""), "\(String(decoding: turn, as: UTF8.self))")
        #expect(summary.functionCalls == (c.parser == .lfm ? sortedArguments(calls) : calls))
        #expect(summary.reasoning == (c.keepsReasoning ? "Need weather." : nil))
        #expect(!events.contains { if case .text(let t) = $0 { return t.contains("<") } else { return false } })
    }
}

/// The first index >= `from` where `needle` occurs.
func find(_ needle: [UInt8], in haystack: [UInt8], from: Int) -> Int? {
    guard !needle.isEmpty, haystack.count >= needle.count, from <= haystack.count - needle.count else { return nil }
    for i in from...(haystack.count - needle.count) where haystack[i..<i + needle.count].elementsEqual(needle) { return i }
    return nil
}
