import LeapCore
import LeapJSON
import LeapMessages
import LeapToolCalls
import Testing

// The cases other projects handle for LFM2 / LFM2.5 tool calls (vLLM's LFM2 tool parser, llama.cpp's LFM2
// chat parser and its thinking tests): reasoning with markers in it, repairable malformed calls, output
// that is never lost, and no tool-call markup in the text. Each response is routed whole, in chunks of
// 1-3 bytes (two cuttings), and with its markers as special tokens between such chunks.

let allMarkers = ["<think>", "</think>", "<|tool_call_start|>", "<|tool_call_end|>", "<tool_call>", "</tool_call>"]

/// The ways a response reaches the router: (name, pieces).
func streamings(_ text: String, specials: Bool = true) -> [(String, [Piece])] {
    let bytes = Array(text.utf8)
    func chunked(_ b: ArraySlice<UInt8>, _ sizes: [Int]) -> [Piece] {
        var out: [Piece] = []
        var i = b.startIndex
        var k = 0
        while i < b.endIndex {
            let end = min(b.endIndex, i + sizes[k % sizes.count])
            out.append(Piece(bytes: Array(b[i..<end]), special: false))
            i = end
            k += 1
        }
        return out
    }
    var ways: [(String, [Piece])] = [("whole", [Piece(bytes: bytes, special: false)]),
                                     ("chunks 1,2,3", chunked(bytes[...], [1, 2, 3])),
                                     ("chunks 3,1,2", chunked(bytes[...], [3, 1, 2]))]
    if specials {
        // Markers as single special tokens, the text between them in chunks.
        var pieces: [Piece] = []
        var rest = text[...]
        while !rest.isEmpty {
            let next = allMarkers.compactMap { m in rest.firstRange(of: m).map { ($0, m) } }
                .min { $0.0.lowerBound < $1.0.lowerBound || ($0.0.lowerBound == $1.0.lowerBound && $0.1.count > $1.1.count) }
            guard let (range, marker) = next else {
                pieces += chunked(Array(rest.utf8)[...], [2, 1, 3])
                break
            }
            pieces += chunked(Array(rest[..<range.lowerBound].utf8)[...], [2, 1, 3])
            pieces.append(.special(marker))
            rest = rest[range.upperBound...]
        }
        ways.append(("markers as special tokens", pieces))
    }
    return ways
}

/// Routes `text` every way and checks the merged events, content, reasoning, calls and notes.
func expectRouted(_ text: String, _ options: ResponseStreamOptions = ResponseStreamOptions(), specials: Bool = true,
                  events expected: [ResponseEvent], content: String, reasoning: String? = nil,
                  notes: [String] = [], sourceLocation: SourceLocation = #_sourceLocation) {
    for (way, pieces) in streamings(text, specials: specials) {
        let (events, summary) = run(pieces, options)
        #expect(merged(events) == expected, "\(way): \(text)", sourceLocation: sourceLocation)
        #expect(summary.content == content, "\(way): \(text)", sourceLocation: sourceLocation)
        #expect(summary.reasoning == reasoning, "\(way): \(text)", sourceLocation: sourceLocation)
        #expect(summary.error == nil, "\(way): \(text)", sourceLocation: sourceLocation)
        let calls = expected.flatMap { e -> [LeapFunctionCall] in if case .functionCalls(let c) = e { return c } else { return [] } }
        #expect(summary.functionCalls == calls, "\(way): \(text)", sourceLocation: sourceLocation)
        #expect(summary.notes.count == notes.count, "\(way): \(summary.notes)", sourceLocation: sourceLocation)
        for (note, fragment) in zip(summary.notes, notes) {
            #expect(note.contains(fragment), "\(way): \(note) should contain \(fragment)", sourceLocation: sourceLocation)
        }
        // Reasoning in inline think tags is text by request, markers and all; elsewhere no markup.
        for case .text(let t) in events where !options.inlineThinkingTags {
            for m in ["<|tool_call_start|>", "<|tool_call_end|>", "<tool_call>", "</tool_call>"] {
                #expect(!t.contains(m), "\(way): markup \(m) in the text \(t)", sourceLocation: sourceLocation)
            }
        }
    }
}

let special = call("special_function", [("arg1", .int(1))])

@Suite struct ReasoningWithMarkersTests {
    let reasoningText = "Let me think about <|tool_call_start|>[special_function(arg1=1)]<|tool_call_end|> hmm"

    /// A call written inside the reasoning is reasoning text, markers and all; the call that follows the
    /// reasoning is the call.
    @Test func markersInsideThinkAreReasoningText() {
        expectRouted("<think>" + reasoningText + "</think>\n\nChecking.<|tool_call_start|>[now()]<|tool_call_end|>",
                     events: [.reasoning(reasoningText), .text("Checking."), .functionCalls([call("now")])],
                     content: "Checking.", reasoning: reasoningText)
        // Inline think tags: the same text, tags included, as text chunks.
        expectRouted("<think>" + reasoningText + "</think>ok",
                     ResponseStreamOptions(inlineThinkingTags: true),
                     events: [.text("<think>" + reasoningText + "</think>ok")], content: "ok", reasoning: reasoningText)
        // A Hermes block inside the reasoning of an LFM turn is reasoning too.
        let hermes = "see <tool_call>{\"name\": \"f\"}</tool_call>"
        expectRouted("<think>" + hermes + "</think>", events: [.reasoning(hermes)], content: "", reasoning: hermes)
    }

    /// The prompt opened the think block: everything up to `</think>` is reasoning.
    @Test func thinkBlockOpenedByThePrompt() {
        expectRouted(reasoningText + "</think>Done.", ResponseStreamOptions(startsInReasoning: true),
                     events: [.reasoning(reasoningText), .text("Done.")], content: "Done.", reasoning: reasoningText)
    }

    /// The standalone parser reads a response as the router does: only what follows the reasoning.
    @Test func parseTextSkipsTheReasoning() throws {
        let lfm = LFMFunctionCallParser()
        #expect(try lfm.parseText("<think>" + reasoningText + "</think>A<|tool_call_start|>[now()]<|tool_call_end|>") == [call("now")])
        #expect(try lfm.parseText("<think>" + reasoningText + "</think>No call.") == [])
        // Reasoning opened by the prompt: a `</think>` outside any block with no `<think>` before it.
        #expect(try lfm.parseText(reasoningText + "</think>No call.") == [])
        #expect(try lfm.parseText(reasoningText + "</think><|tool_call_start|>[now()]<|tool_call_end|>") == [call("now")])
        // Without markers: the body is what follows the reasoning.
        #expect(try lfm.parseText("<think>[f()]</think>[now()]") == [call("now")])
        // A `</think>` inside a string argument of a call is not the end of any reasoning.
        #expect(try lfm.parseText("<|tool_call_start|>[f(s=\"</think>\")]<|tool_call_end|>") == [call("f", [("s", .string("</think>"))])])
    }
}

@Suite struct RepairTests {
    let lfm = LFMFunctionCallParser()

    func parsed(_ body: String) throws -> ([LeapFunctionCall], [String]) {
        var repairs: [String] = []
        let calls = try lfm.parse(body, repairs: &repairs)
        return (calls, repairs)
    }

    @Test func setsAreReadAsLists() throws {
        let (calls, repairs) = try parsed("[label(tags={'urgent', 'bug'})]")
        #expect(calls == [call("label", [("tags", .array([.string("urgent"), .string("bug")]))])])
        #expect(repairs == ["read the set {'urgent', 'bug'} as a list (JSON has no sets)"])
        // Written order, repeats once (a set's elements are distinct), tuples allowed, trailing comma.
        #expect(try lfm.parse("[f(s={3, 1, 3, (2, 'x'),})]")
            == [call("f", [("s", .array([.int(3), .int(1), .array([.int(2), .string("x")])]))])])
        // `{}` is still an empty dict, `{'k': v}` a dict; nothing repaired.
        let (dicts, none) = try parsed("[f(a={}, b={'k': {1, 2}})]")
        #expect(dicts == [call("f", [("a", .object(JSONObject())), ("b", .object(JSONObject([("k", .array([.int(1), .int(2)]))])))])])
        #expect(none.count == 1)  // the inner set
        // Lists and dicts cannot be set elements (Python cannot hash them).
        #expect(thrownError { try lfm.parse("[f(s={1, [2]})]") }?.message
            .contains("at offset 9: expected a set element that Python can hash (a string, number, True/False/None or tuple), found a list") == true)
        #expect(thrownError { try lfm.parse("[f(s={{'a': 1}, 2})]") }?.message.contains("found a dict or set") == true)
        #expect(thrownError { try lfm.parse("[f(s={1 2})]") }?.message
            .contains("at offset 8: expected ':' (a dict) or ',' or '}' (a set) after the first item in braces, found '2'") == true)
    }

    /// Unescaped quotes are taken as part of the string only when exactly one closing quote lets the
    /// body parse.
    @Test func nestedQuotesRepairedOnlyWhenUnambiguous() throws {
        let (sed, repairs) = try parsed("[bash(command='sed -n '360,450p' /testbed/sympy/matrices/common.py')]")
        #expect(sed == [call("bash", [("command", .string("sed -n '360,450p' /testbed/sympy/matrices/common.py"))])])
        #expect(repairs == ["took the unescaped quotes inside 'sed -n '360,450p' /testbed/sympy/matrices/common.py' as part of the string (the only closing quote with which the call parses)"])
        // Double quotes in JSON arguments, and a second broken string in the same body.
        #expect(try lfm.parse(#"{"name": "say", "arguments": {"text": "he said "hi" twice"}}"#)
            == [call("say", [("text", .string("he said \"hi\" twice"))])])
        let (two, twoRepairs) = try parsed("[a(x='it's'), b(y=\"a \"b\" c\")]")
        #expect(two == [call("a", [("x", .string("it's"))]), call("b", [("y", .string("a \"b\" c"))])])
        #expect(twoRepairs.count == 2)
        // Only the last quote is followed by a delimiter (the one after `y` is followed by " done").
        #expect(try lfm.parse("[f(cmd='echo 'x, y' done')]") == [call("f", [("cmd", .string("echo 'x, y' done"))])])
    }

    @Test func nestedQuotesLimits() {
        // Two readings: a = "x'y" and b = "z", or a = "x'y', b='z": not repaired.
        let twoReadings = thrownError { try lfm.parse("[f(a='x'y', b='z')]") }
        #expect(twoReadings?.message.contains("at offset 8: expected ',' or ')' in the call of 'f', found 'y'") == true)
        #expect(twoReadings?.message.contains("could end it in more than one place: not repaired") == true)
        // No quote that could close it: the error of the text as written.
        #expect(thrownError { try lfm.parse("[f(a='x'y)]") }?.message
            == "invalid function call at offset 8: expected ',' or ')' in the call of 'f', found 'y' in: [f(a='x'y)]")
        // Raw and triple-quoted strings are left alone.
        #expect(thrownError { try lfm.parse("[f(a=r'x'y')]") } != nil)
        #expect(thrownError { try lfm.parse("[f(a='''x'''y''')]") } != nil)
    }

    @Test func aBadCallAmongGoodOnesIsLeftOut() throws {
        let (calls, repairs) = try parsed("[get_candidate_status(candidate_id='12345'), bad(x=b'z'), now()]")
        #expect(calls == [call("get_candidate_status", [("candidate_id", .string("12345"))]), call("now")])
        #expect(repairs.count == 1)
        #expect(repairs.first?.hasPrefix("left out the call bad(x=b'z') that does not parse (invalid function call at offset 51: expected a value") == true)
        // JSON objects: one without a name among good ones.
        #expect(try lfm.parse(#"[{"name": "a"}, {"arguments": {}}, {"name": "b"}]"#) == [call("a"), call("b")])
        #expect(try HermesFunctionCallParser().parse(#"[{"name": "a"}, {"name": 3}]"#) == [call("a")])
        // Bare calls without brackets.
        #expect(try lfm.parse("f(1), g()") == [call("g")])
    }

    @Test func badCallLimits() {
        // Every call bad: the error of the first.
        #expect(thrownError { try lfm.parse("[bad(x=b'z')]") }?.message.contains("at offset 7: expected a value") == true)
        #expect(thrownError { try lfm.parse("[f(1), g(2)]") }?.message.contains("at offset 3: expected a keyword argument") == true)
        // Brackets or quotes that do not balance: where the bad call ends is not certain.
        #expect(thrownError { try lfm.parse("[g(), f(a='x)]") } != nil)
        #expect(thrownError { try lfm.parse("[g(), f(a=[1)]") } != nil)
        // A good call followed by junk is not a bad call: the list itself is malformed.
        #expect(thrownError { try lfm.parse("[f(a=1) g(b=2)]") } != nil)
    }

    /// An LFM model writing a Hermes block: read as a call, noted.
    @Test func hermesBlockFromAnLFMModel() {
        expectRouted("I'll check.<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>",
                     events: [.text("I'll check."), .functionCalls([call("get_weather", [("city", .string("Paris"))])])],
                     content: "I'll check.", notes: ["read the block <tool_call>...</tool_call> as a tool call"])
        // And the standalone parser, which reports what it repaired in a block and in a bare body alike.
        var repairs: [String] = []
        #expect((try? lfm.parseText("x<tool_call>\n{\"name\": \"now\"}\n</tool_call>", repairs: &repairs)) == [call("now")])
        #expect(repairs == ["read the block <tool_call>...</tool_call> as a tool call"])
        repairs = []
        #expect((try? lfm.parseText("[label(tags={'a'})]", repairs: &repairs)) == [call("label", [("tags", .array([.string("a")]))])])
        #expect(repairs == ["repaired a tool call: read the set {'a'} as a list (JSON has no sets)"])
    }

    /// Repairs in a streamed response, every way it can arrive.
    @Test func repairsWhenStreamed() {
        expectRouted("Labels:<|tool_call_start|>[label(tags={'urgent', 'bug'}), bad(x=b'z')]<|tool_call_end|>",
                     events: [.text("Labels:"), .functionCalls([call("label", [("tags", .array([.string("urgent"), .string("bug")]))])])],
                     content: "Labels:",
                     notes: ["repaired a tool call: read the set {'urgent', 'bug'} as a list", "repaired a tool call: left out the call bad(x=b'z')"])
        expectRouted("<|tool_call_start|>[bash(command='sed -n '1,9p' f.py')]<|tool_call_end|>",
                     events: [.functionCalls([call("bash", [("command", .string("sed -n '1,9p' f.py"))])])],
                     content: "", notes: ["repaired a tool call: took the unescaped quotes inside"])
    }
}

@Suite struct OutputNeverLostTests {
    let asText = ResponseStreamOptions(unparsedCallsAsText: true)

    @Test func unparsedCallBecomesTextWhenAsked() {
        expectRouted("ok <|tool_call_start|>[f(a=]<|tool_call_end|> after", asText,
                     events: [.text("ok [f(a=] after")], content: "ok [f(a=] after",
                     notes: ["kept a tool call that does not parse as text: invalid function call at offset 5: expected a value, found ']'"])
        // Cut off inside a call.
        expectRouted("x<|tool_call_start|>[get_weather(city=\"Par", asText,
                     events: [.text("x[get_weather(city=\"Par")], content: "x[get_weather(city=\"Par",
                     notes: ["kept a tool call that does not parse as text: unterminated function call"])
        // Routing goes on: a good call after a bad one is still a call.
        expectRouted("<|tool_call_start|>[f(1)]<|tool_call_end|>\n<|tool_call_start|>[now()]<|tool_call_end|>", asText,
                     events: [.text("[f(1)]"), .functionCalls([call("now")])], content: "[f(1)]",
                     notes: ["kept a tool call that does not parse as text"])
        // Markers inside the kept text are removed (text form only: special tokens inside a body are not part of it).
        expectRouted("<|tool_call_start|>[f(<tool_call>]<|tool_call_end|>", asText, specials: false,
                     events: [.text("[f(]")], content: "[f(]", notes: ["kept a tool call that does not parse as text"])
    }

    /// LEAP's behaviour is the default: the error, routing stopped.
    @Test func unparsedCallIsAnErrorByDefault() {
        for (way, pieces) in streamings("ok <|tool_call_start|>[f(a=]<|tool_call_end|> after") {
            let (events, summary) = run(pieces)
            #expect(merged(events).first == .text("ok "), "\(way)")
            guard case .error(let e, let body)? = events.last else {
                Issue.record("\(way): no error in \(events)")
                continue
            }
            #expect(e.kind == .functionCallParsing && body == "[f(a=]", "\(way)")
            #expect(summary.error == e && summary.content == "ok", "\(way)")
        }
    }

    /// A repeat of the call just made, capped with a second end marker, is dropped; so is any end
    /// marker outside a block. Text that only starts like the repeat is text.
    @Test func echoedCallsAndStrayEndMarkersNeverReachTheText() {
        let body = "[grocery.orderIngredients(ingredientList=[{'name': 'apple', 'quantity': '2'}], deliveryAddress='123 Main St')]"
        let order = call("grocery.orderIngredients", [("ingredientList", .array([.object(JSONObject([("name", .string("apple")), ("quantity", .string("2"))]))])),
                                                      ("deliveryAddress", .string("123 Main St"))])
        for options in [ResponseStreamOptions(), asText] {
            expectRouted("<|tool_call_start|>" + body + "<|tool_call_end|>" + body + "<|tool_call_end|>", options,
                         events: [.functionCalls([order])], content: "", notes: ["dropped a repeat of the tool call just made"])
            expectRouted("<|tool_call_start|>" + body + "<|tool_call_end|>\n" + body + "<|tool_call_end|>\nDone.", options,
                         events: [.functionCalls([order]), .text("\nDone.")], content: "Done.", notes: ["dropped a repeat"])
        }
        // Not a repeat: text that diverges, or the repeat without its end marker, is text.
        expectRouted("<|tool_call_start|>[now()]<|tool_call_end|> [1] is a footnote",
                     events: [.functionCalls([call("now")]), .text(" [1] is a footnote")], content: "[1] is a footnote")
        expectRouted("<|tool_call_start|>[now()]<|tool_call_end|>[now()]",
                     events: [.functionCalls([call("now")]), .text("[now()]")], content: "[now()]")
        expectRouted("<|tool_call_start|>[now()]<|tool_call_end|>[now()] and more<|tool_call_end|>",
                     events: [.functionCalls([call("now")]), .text("[now()] and more")], content: "[now()] and more",
                     notes: ["dropped <|tool_call_end|> written outside a tool call"])
        expectRouted("A<|tool_call_end|>B</tool_call>C",
                     events: [.text("ABC")], content: "ABC",
                     notes: ["dropped <|tool_call_end|> written outside", "dropped </tool_call> written outside"])
    }
}
