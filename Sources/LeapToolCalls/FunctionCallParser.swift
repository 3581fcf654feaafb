import LeapCore
import LeapJSON
import LeapMessages

/// Turns the text a model writes between two tool-call markers into function calls, and back.
///
/// The response router (`ResponseStreamProcessor`) cuts the generated text at `startMarker` /
/// `endMarker` and hands the text in between (the *body*, without markers) to `parse`. `dump` writes
/// calls in the model's own format, markers included, for prompts that must show past calls as text
/// (LEAP rule 8.11).
package protocol FunctionCallParser: Sendable {
    var startMarker: String { get }
    var endMarker: String { get }
    /// Calls in one body; throws `LeapError(.functionCallParsing, ...)` naming the offset and the text.
    func parse(_ body: String) throws -> [LeapFunctionCall]
    /// The calls as the model writes them, with markers ("" for no calls).
    func dump(_ calls: [LeapFunctionCall]) -> String
}

extension FunctionCallParser {
    /// Parses every `start ... end` block of `text` (text outside the blocks is ignored; a last block
    /// without its end marker runs to the end of the text). Text without any start marker is parsed as
    /// one body, so both "raw model output" and "just the body" work.
    package func parseText(_ text: String) throws -> [LeapFunctionCall] {
        let bytes = Array(text.utf8)
        let start = Array(startMarker.utf8)
        let end = Array(endMarker.utf8)
        func body(_ r: Range<Int>) -> String { String(decoding: bytes[r], as: UTF8.self) }
        guard var open = find(start, in: bytes, from: 0) else {
            return try parse(body(0..<(find(end, in: bytes, from: 0) ?? bytes.count)))
        }
        var calls: [LeapFunctionCall] = []
        while true {
            let bodyStart = open + start.count
            guard let close = find(end, in: bytes, from: bodyStart) else {
                return calls + (try parse(body(bodyStart..<bytes.count)))
            }
            calls += try parse(body(bodyStart..<close))
            guard let next = find(start, in: bytes, from: close + end.count) else { return calls }
            open = next
        }
    }
}

extension FunctionCallParser {
    /// `body` (the calls as written, without markers) with every marker inside it, which can only sit
    /// in a string literal, written with its `<` as the escape `\u003c` (the same character in Python
    /// and JSON strings): a string argument holding `</tool_call>` or `<|tool_call_end|>` would
    /// otherwise end the block early for `parseText` and for the response router.
    func escapingMarkers(_ body: String) -> String {
        var out = body
        for marker in [startMarker, endMarker] where out.contains(marker) {
            out = out.replacing(marker, with: "\\u003c" + marker.dropFirst())
        }
        return out
    }
}

/// The first index >= `from` where `needle` occurs in `haystack`.
func find(_ needle: [UInt8], in haystack: [UInt8], from: Int) -> Int? {
    guard !needle.isEmpty, haystack.count >= needle.count, from <= haystack.count - needle.count else { return nil }
    for i in from...(haystack.count - needle.count) where haystack[i] == needle[0] {
        if haystack[i..<i + needle.count].elementsEqual(needle) { return i }
    }
    return nil
}

/// The built-in parsers, by the names the C API and Python use.
package enum FunctionCallParserKind: String, Sendable, CaseIterable {
    case lfm, hermes

    package var parser: any FunctionCallParser {
        switch self {
        case .lfm: return LFMFunctionCallParser()
        case .hermes: return HermesFunctionCallParser()
        }
    }
}

/// LFM2 / LFM2.5's format (the default): `<|tool_call_start|>[get_weather(city="Paris"), now()]<|tool_call_end|>`.
///
/// `parse` also accepts the JSON variant the models write when asked to ("Output function calls as
/// JSON"): `[{"name": "f", "arguments": {...}}]` or a single object, and bare calls without brackets.
/// See `PythonLiteralParser` for the exact grammar.
package struct LFMFunctionCallParser: FunctionCallParser {
    package let startMarker = "<|tool_call_start|>"
    package let endMarker = "<|tool_call_end|>"

    package init() {}

    package func parse(_ body: String) throws -> [LeapFunctionCall] {
        try PythonLiteralParser.parseCalls(body)
    }

    /// `<|tool_call_start|>[name(k=v, ...), ...]<|tool_call_end|>` with keyword arguments sorted by
    /// name, Python literals (`True/False/None`, `[...]`, `{"k": v}`, floats in `repr` form) and strings
    /// double-quoted WITH escaping (markers inside strings too), so that `parse` gives the calls back. (LEAP's dump did not escape
    /// strings, so a value containing `"` or a newline came back broken.)
    package func dump(_ calls: [LeapFunctionCall]) -> String {
        if calls.isEmpty { return "" }
        return startMarker + escapingMarkers("[" + calls.map(PythonicWriter.call).joined(separator: ", ") + "]") + endMarker
    }
}

/// Hermes / Qwen format: one JSON object per block, `<tool_call>{"name": "f", "arguments": {...}}</tool_call>`.
///
/// `arguments` may also be a string holding JSON (OpenAI style). LEAP's Hermes parser dropped nulls
/// inside arrays; this one keeps values as written.
package struct HermesFunctionCallParser: FunctionCallParser {
    package let startMarker = "<tool_call>"
    package let endMarker = "</tool_call>"

    package init() {}

    package func parse(_ body: String) throws -> [LeapFunctionCall] {
        try PythonLiteralParser.parseJSONCalls(body)
    }

    /// One block per call, newline-separated, laid out as Qwen's chat templates render `tool_calls`:
    /// `<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>` (arguments as `tojson`, i.e.
    /// Python `json.dumps` separators, keys in their order).
    package func dump(_ calls: [LeapFunctionCall]) -> String {
        calls.map { call in
            var name = ""
            JSONValue.writeString(call.name, to: &name, ensureASCII: false)
            return startMarker + escapingMarkers("\n{\"name\": " + name + ", \"arguments\": "
                + JSONValue.object(call.arguments).serialized(.python()) + "}\n") + endMarker
        }.joined(separator: "\n")
    }
}
