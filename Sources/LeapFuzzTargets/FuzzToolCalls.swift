import Glibc
import LeapMessages
import LeapToolCalls

/// Tool-call parsers and the response router: any bytes.
/// - A body the LFM or Hermes parser accepts must survive dump -> parse (LFM sorts the arguments).
/// - A function definition parsed from tool JSON must survive toolJSON -> parse.
/// - The router, fed the bytes cut at points derived from the input (some pieces marked special), must
///   emit only non-empty chunks and a summary whose calls are the concatenation of its call events; with
///   `unparsedCallsAsText` it never fails, and (reasoning not inline) no text chunk holds its parser's
///   markers.
/// The parsers run with their repairs (sets, unescaped quotes, bad calls among good ones), which the
/// seeds exercise.
package let fuzzToolCalls: FuzzTarget = (
    seeds: [
        Array(#"[get_weather(city="Paris", unit='c', n=-1.5e3, l=[1, (2,), {"k": None}], t=True), now()]"#.utf8),
        Array(#"[{"name": "f", "arguments": {"a": "\u00e9\ud83d\ude00", "b": [null, true]}}]"#.utf8),
        Array("<think>hmm</think>ok <|tool_call_start|>[f(s=\"x\\n\\\"y\")]<|tool_call_end|> <tool_call>\n{\"name\": \"g\"}\n</tool_call>".utf8),
        Array("[f(a='''tri\nple''', b=r\"\\d\", c=0x1F, d=1_000, e=.5)]".utf8),
        Array("[label(tags={'urgent', 'bug', 1}), bash(command='sed -n '1,9p' f.py'), bad(x=b'z'), g(a='x'y', b='z')]".utf8),
        Array("<think>see <|tool_call_start|>[f()]<|tool_call_end|></think>ok<tool_call>{\"name\": \"h\", \"arguments\": {\"s\": \"a \"q\" b\"}}</tool_call>[h()]<|tool_call_end|>".utf8),
        Array(#"{"type":"function","function":{"name":"get_weather","description":"d","parameters":{"type":"object","properties":{"city":{"type":"string","enum":["a","b"],"description":"c"},"n":{"type":"array","items":{"type":"object","properties":{"x":{"type":"number","enum":[1.5]}},"required":["x"]}},"z":{"type":"null"}},"required":["city"]}}}"#.utf8),
    ],
    run: { bytes in
        let text = String(decoding: bytes, as: UTF8.self)
        let lfm = LFMFunctionCallParser()
        let hermes = HermesFunctionCallParser()
        if let calls = try? lfm.parse(text), !calls.isEmpty, calls.allSatisfy({ LeapFunction.isIdentifier($0.name) && $0.arguments.keys.allSatisfy(LeapFunction.isIdentifier) }) {
            let dumped = lfm.dump(calls)
            guard let again = try? lfm.parseText(dumped), again.count == calls.count,
                  zip(again, calls).allSatisfy({ sameArguments($0, $1) }) else {
                fuzzFailure("LFM dump/parse round trip failed for input \(bytes): \(dumped)")
            }
        }
        if let calls = try? hermes.parse(text), !calls.isEmpty {
            guard let again = try? hermes.parseText(hermes.dump(calls)), again.count == calls.count,
                  zip(again, calls).allSatisfy({ sameName($0, $1) && $0.arguments == $1.arguments }) else {
                fuzzFailure("Hermes dump/parse round trip failed for input \(bytes)")
            }
        }
        if let f = try? LeapFunction.fromToolJSON(text) {
            guard (try? LeapFunction.fromToolJSON(f.toolJSON)) == f else {
                fuzzFailure("function definition round trip failed for input \(text)")
            }
        }
        for (parser, asText) in [(lfm, false), (hermes, false), (nil, false), (lfm, true), (hermes, true)] as [((any FunctionCallParser)?, Bool)] {
            let inline = bytes.count % 2 == 0
            var router = ResponseStreamProcessor(options: ResponseStreamOptions(functionCallParser: parser, inlineThinkingTags: inline,
                                                                               unparsedCallsAsText: asText))
            var events: [ResponseEvent] = []
            var start = 0
            var i = 0
            while start < bytes.count {
                let len = 1 + Int(bytes[i % bytes.count]) % 7
                let end = min(bytes.count, start + len)
                events += router.feed(Array(bytes[start..<end]), isSpecial: bytes[start] == 0x3C && len == 3)
                start = end
                i += 1
            }
            let (tail, summary) = router.finish()
            events += tail
            var emitted: [LeapFunctionCall] = []
            let markers = parser.map { p in ([(p.startMarker, p.endMarker)] + p.alternateMarkers).flatMap { [$0.0, $0.1] } } ?? []
            for e in events {
                switch e {
                case .text(let t):
                    if t.isEmpty { fuzzFailure("empty chunk for input \(bytes)") }
                    if asText && !inline, let m = markers.first(where: { holds(t, $0) }) { fuzzFailure("\(m) in the text for input \(bytes)") }
                case .reasoning(let t): if t.isEmpty { fuzzFailure("empty chunk for input \(bytes)") }
                case .functionCalls(let c): emitted += c
                case .error: if asText { fuzzFailure("an error with unparsedCallsAsText for input \(bytes)") }
                }
            }
            if emitted != summary.functionCalls { fuzzFailure("calls mismatch for input \(bytes)") }
        }
    }
)

/// Names as bytes: LeapFunctionCall's == compares them as Strings, under canonical equivalence.
private func sameName(_ a: LeapFunctionCall, _ b: LeapFunctionCall) -> Bool { a.name.utf8.elementsEqual(b.name.utf8) }

/// Same name and the same arguments in any order (the LFM dump sorts them).
private func sameArguments(_ a: LeapFunctionCall, _ b: LeapFunctionCall) -> Bool {
    sameName(a, b) && a.arguments.count == b.arguments.count && a.arguments.allSatisfy { b.arguments[$0.key] == $0.value }
}

/// Whether `marker`'s bytes occur in `text` (a Character search misses a marker that shares its last
/// Character with a combining mark after it).
private func holds(_ text: String, _ marker: String) -> Bool {
    let t = Array(text.utf8), m = Array(marker.utf8)
    guard !m.isEmpty, t.count >= m.count else { return false }
    return (0...(t.count - m.count)).contains { t[$0..<($0 + m.count)].elementsEqual(m) }
}
