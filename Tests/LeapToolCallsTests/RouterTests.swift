import LeapCore
import LeapJSON
import LeapMessages
import LeapToolCalls
import Testing

/// One scripted piece: its text and whether it is a single special token.
struct Piece {
    var bytes: [UInt8]
    var special: Bool
    static func text(_ s: String) -> Piece { Piece(bytes: Array(s.utf8), special: false) }
    static func special(_ s: String) -> Piece { Piece(bytes: Array(s.utf8), special: true) }
}

func run(_ pieces: [Piece], _ options: ResponseStreamOptions = ResponseStreamOptions()) -> ([ResponseEvent], ResponseSummary) {
    var p = ResponseStreamProcessor(options: options)
    var events: [ResponseEvent] = []
    for piece in pieces { events += p.feed(piece.bytes, isSpecial: piece.special) }
    let (tail, summary) = p.finish()
    return (events + tail, summary)
}

/// Adjacent events of the same kind merged: the stream independent of how it was cut.
func merged(_ events: [ResponseEvent]) -> [ResponseEvent] {
    var out: [ResponseEvent] = []
    for e in events {
        switch (out.last, e) {
        case (.text(let a)?, .text(let b)): out[out.count - 1] = .text(a + b)
        case (.reasoning(let a)?, .reasoning(let b)): out[out.count - 1] = .reasoning(a + b)
        default: out.append(e)
        }
    }
    return out
}

let lfmCalls = [call("get_weather", [("city", .string("Paris"))]), call("now")]

/// Scenarios written as plain text (markers included as text), with the events expected.
struct Scenario: CustomTestStringConvertible, Sendable {
    var name: String
    var text: String
    var options: ResponseStreamOptions
    var events: [ResponseEvent]
    var content: String
    var reasoning: String?
    var testDescription: String { name }
}

let scenarios: [Scenario] = [
    Scenario(name: "think, text, LFM calls, text",
             text: "<think>Let me think é.</think>\n\nSure, checking.<|tool_call_start|>[get_weather(city=\"Paris\"), now()]<|tool_call_end|>Done 😀",
             options: ResponseStreamOptions(),
             events: [.reasoning("Let me think é."), .text("Sure, checking."), .functionCalls(lfmCalls), .text("Done 😀")],
             content: "Sure, checking.Done 😀", reasoning: "Let me think é."),
    Scenario(name: "two LFM blocks with whitespace between",
             text: "A<|tool_call_start|>[now()]<|tool_call_end|>\n<|tool_call_start|>[now()]<|tool_call_end|>\n\nB",
             options: ResponseStreamOptions(),
             events: [.text("A"), .functionCalls([call("now")]), .functionCalls([call("now")]), .text("\n\nB")],
             content: "A\n\nB", reasoning: nil),
    Scenario(name: "Hermes, two blocks",
             text: "I'll call.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>",
             options: ResponseStreamOptions(functionCallParser: HermesFunctionCallParser()),
             events: [.text("I'll call.\n"), .functionCalls([call("a", [("x", .int(1))])]), .functionCalls([call("b")])],
             content: "I'll call.", reasoning: nil),
    Scenario(name: "no parser: markup is text",
             text: "x<|tool_call_start|>[f()]<|tool_call_end|>",
             options: ResponseStreamOptions(functionCallParser: nil),
             events: [.text("x<|tool_call_start|>[f()]<|tool_call_end|>")],
             content: "x<|tool_call_start|>[f()]<|tool_call_end|>", reasoning: nil),
    Scenario(name: "near-markers are text; a stray end marker is dropped",
             text: "a < b <<thin <think and <|tool_call_star</thinks> <|tool_call_end|> </tool_call é<",
             options: ResponseStreamOptions(),
             events: [.text("a < b <<thin <think and <|tool_call_star</thinks>  </tool_call é<")],
             content: "a < b <<thin <think and <|tool_call_star</thinks>  </tool_call é<", reasoning: nil),
    Scenario(name: "inline thinking tags",
             text: "<think>r1 r2</think>\nanswer",
             options: ResponseStreamOptions(inlineThinkingTags: true),
             events: [.text("<think>r1 r2</think>\nanswer")],
             content: "answer", reasoning: "r1 r2"),
    Scenario(name: "starts in reasoning",
             text: "\nthinking...\n</think>\n\nanswer<|tool_call_start|>[now()]<|tool_call_end|>",
             options: ResponseStreamOptions(startsInReasoning: true),
             events: [.reasoning("\nthinking...\n"), .text("answer"), .functionCalls([call("now")])],
             content: "answer", reasoning: "thinking..."),
    Scenario(name: "starts in reasoning, inline",
             text: "t</think>a",
             options: ResponseStreamOptions(inlineThinkingTags: true, startsInReasoning: true),
             events: [.text("<think>t</think>a")],
             content: "a", reasoning: "t"),
    Scenario(name: "stray closing tag is dropped; tool markers inside reasoning are reasoning",
             text: "a</think>b<think>see <|tool_call_start|>[x()]</think>c",
             options: ResponseStreamOptions(),
             events: [.text("ab"), .reasoning("see <|tool_call_start|>[x()]"), .text("c")],
             content: "abc", reasoning: "see <|tool_call_start|>[x()]"),
    Scenario(name: "JSON variant inside LFM markers",
             text: "<|tool_call_start|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"now\"}]<|tool_call_end|>",
             options: ResponseStreamOptions(),
             events: [.functionCalls(lfmCalls)],
             content: "", reasoning: nil),
]

@Suite struct ResponseRouterTests {
    /// Every way of cutting the text into two and three pieces (at every byte, including inside
    /// markers and inside UTF-8 characters), and byte by byte, gives the same merged events and summary.
    @Test(arguments: scenarios)
    func everySplitPointGivesTheSameEvents(_ s: Scenario) {
        let bytes = Array(s.text.utf8)
        var splits: [[Int]] = [Array(1..<bytes.count)]  // byte by byte
        for i in 0...bytes.count {
            splits.append([i])
            for j in i...bytes.count where bytes.count < 200 { splits.append([i, j]) }
        }
        var failures = 0
        for cuts in splits where failures < 3 {
            var pieces: [Piece] = []
            var start = 0
            for c in cuts + [bytes.count] {
                pieces.append(Piece(bytes: Array(bytes[start..<c]), special: false))
                start = c
            }
            let (events, summary) = run(pieces, s.options)
            let ok = merged(events) == s.events && summary.content == s.content && summary.reasoning == s.reasoning
                && summary.error == nil && summary.rawText == s.text
                && !events.contains { if case .text(let t) = $0 { return t.isEmpty || t.contains("\u{FFFD}") } else { return false } }
            if !ok {
                failures += 1
                Issue.record("\(s.name), cuts \(cuts): \(events) / \(summary)")
            }
        }
    }

    /// Markers as single special tokens, control tokens dropped, one event per piece.
    @Test func specialTokens() {
        let (events, summary) = run([
            .special("<think>"), .text("reason"), .special("</think>"), .text("Hi "), .special("<|tool_call_start|>"),
            .text("[get_weather(city="), .special("<|im_end|>"), .text("\"Paris\"), now()]"), .special("<|tool_call_end|>"),
            .text(" bye"), .special("<|tool_list_start|>"), .special("<|im_end|>"),
        ])
        #expect(events == [.reasoning("reason"), .text("Hi "), .functionCalls(lfmCalls), .text(" bye")])
        #expect(summary.content == "Hi  bye")
        #expect(summary.rawText == "<think>reason</think>Hi <|tool_call_start|>[get_weather(city=\"Paris\"), now()]<|tool_call_end|> bye")
        #expect(summary.assistantMessage == ChatMessage(role: .assistant, content: [.text("Hi  bye")], reasoningContent: "reason",
                                                         functionCalls: lfmCalls))
    }

    @Test func specialMarkersPassThroughWithoutParser() {
        let (events, _) = run([.text("a"), .special("<|tool_call_start|>"), .text("[f()]"), .special("<|tool_call_end|>"), .special("<|im_end|>")],
                              ResponseStreamOptions(functionCallParser: nil))
        #expect(merged(events) == [.text("a<|tool_call_start|>[f()]<|tool_call_end|>")])
        // Another parser's markers are not control tokens either.
        let (hermes, _) = run([.special("<|tool_call_start|>"), .text("[f()]"), .special("<|tool_call_end|>")],
                              ResponseStreamOptions(functionCallParser: HermesFunctionCallParser()))
        #expect(merged(hermes) == [.text("<|tool_call_start|>[f()]<|tool_call_end|>")])
    }

    @Test func malformedCallStopsRouting() {
        var p = ResponseStreamProcessor()
        #expect(p.feed("ok <|tool_call_start|>[f(a=]") == [.text("ok ")])
        let events = p.feed("<|tool_call_end|>after")
        guard case .error(let e, let text)? = events.first, events.count == 1 else {
            Issue.record("expected one error event, got \(events)")
            return
        }
        #expect(e.kind == .functionCallParsing)
        #expect(e.message.contains("at offset 5"))
        #expect(text == "[f(a=]")
        #expect(p.hasFailed)
        #expect(p.feed("more text") == [])
        let (tail, summary) = p.finish()
        #expect(tail.isEmpty)
        #expect(summary.error == e)
        #expect(summary.content == "ok")
    }

    @Test func unterminatedCallAtFinish() {
        let (good, goodSummary) = run([.text("<|tool_call_start|>[now()]")])
        #expect(good == [.functionCalls([call("now")])])
        #expect(goodSummary.functionCalls == [call("now")])
        let (bad, badSummary) = run([.text("x<|tool_call_start|>[get_weather(city=\"Par")])
        #expect(bad.count == 2)
        if case .error(let e, let text)? = bad.last {
            #expect(e.message.hasPrefix("unterminated function call (the response ended before <|tool_call_end|>)"))
            #expect(text == "[get_weather(city=\"Par")
        } else {
            Issue.record("expected an error, got \(bad)")
        }
        #expect(badSummary.error != nil)
    }

    @Test func utf8IsNeverSplit() {
        var p = ResponseStreamProcessor()
        let bytes = Array("é😀".utf8)
        #expect(p.feed([bytes[0]], isSpecial: false) == [])
        #expect(p.feed([bytes[1], bytes[2]], isSpecial: false) == [.text("é")])
        #expect(p.feed([bytes[3], bytes[4]], isSpecial: false) == [])
        #expect(p.feed([bytes[5]], isSpecial: false) == [.text("😀")])
        // Bytes that can never form a character become U+FFFD, also when a control token cuts a sequence.
        #expect(p.feed([0xFF], isSpecial: false) == [.text("\u{FFFD}")])
        #expect(p.feed([0xC3], isSpecial: false) == [])
        #expect(p.feed("<|im_end|>", isSpecial: true) == [.text("\u{FFFD}")])
    }

    @Test func heldBackPrefixIsFlushedAsSoonAsItCannotBeAMarker() {
        var p = ResponseStreamProcessor()
        #expect(p.feed("a <|tool") == [.text("a ")])
        #expect(p.feed("box|>") == [.text("<|toolbox|>")])
        #expect(p.feed("<") == [])
        let (tail, summary) = p.finish()
        #expect(tail == [.text("<")])
        #expect(summary.content == "a <|toolbox|><")
    }

    @Test func reasoningIsTrimmedAndNilWhenEmpty() {
        #expect(run([.text("<think>\n  </think>x")]).1.reasoning == nil)
        #expect(run([.text("<think>\n a b \n</think>x")]).1.reasoning == "a b")
    }

    @Test func hermesWithSpecialMarkers() {
        let (events, summary) = run([.special("<tool_call>"), .text("{\"name\": \"now\"}"), .special("</tool_call>"), .special("<|im_end|>")],
                                    ResponseStreamOptions(functionCallParser: HermesFunctionCallParser()))
        #expect(events == [.functionCalls([call("now")])])
        #expect(summary.content == "")
        #expect(summary.assistantMessage.functionCalls == [call("now")])
    }
}
