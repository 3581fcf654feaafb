import LeapCore
import LeapJSON
import LeapMessages

/// Turns the text a model writes between two tool-call markers into function calls, and back.
///
/// The response router (`ResponseStreamProcessor`) cuts the generated text at `startMarker` /
/// `endMarker` (or at one of `alternateMarkers`) and hands the text in between (the *body*, without
/// markers) to `parse`. `dump` writes calls in the model's own format, markers included, for prompts
/// that must show past calls as text (LEAP rule 8.11).
package protocol FunctionCallParser: Sendable {
    var startMarker: String { get }
    var endMarker: String { get }
    /// Other markers the models of this format are seen to write around calls (their bodies go to
    /// `parse` too; reading one is noted as a repair).
    var alternateMarkers: [(start: String, end: String)] { get }
    /// Calls in one body, appending what was repaired to `repairs` (see `PythonLiteralParser`); throws
    /// `LeapError(.functionCallParsing, ...)` naming the offset and the text.
    func parse(_ body: String, repairs: inout [String]) throws -> [LeapFunctionCall]
    /// The calls as the model writes them, with markers ("" for no calls).
    func dump(_ calls: [LeapFunctionCall]) -> String
}

extension FunctionCallParser {
    /// Calls in one body, repairs not reported.
    package func parse(_ body: String) throws -> [LeapFunctionCall] {
        var repairs: [String] = []
        return try parse(body, repairs: &repairs)
    }

    /// The calls of a whole response, read as the response router reads a streamed one: every
    /// marker-delimited block outside the think block (a call written inside `<think>...</think>` is
    /// reasoning; a `</think>` outside any block with no `<think>` before it closes a think block the
    /// prompt opened, so everything before it is reasoning); a last block without its end marker runs
    /// to the end of the text. Text without any start marker is parsed as one body (what follows the
    /// reasoning, up to an end marker), so both "raw model output" and "just the body" work. What was
    /// repaired, and markup that was dropped, is appended to `repairs` and logged as a warning.
    package func parseText(_ text: String, repairs: inout [String]) throws -> [LeapFunctionCall] {
        let bytes = Array(text.utf8)
        func route(startsInReasoning: Bool) throws -> ResponseStreamProcessor {
            var router = ResponseStreamProcessor(options: ResponseStreamOptions(functionCallParser: self,
                                                                               startsInReasoning: startsInReasoning))
            var events = router.feed(bytes, isSpecial: false)
            events += router.finish().events
            for case .error(let e, _) in events { throw e }
            return router
        }
        var router = try route(startsInReasoning: false)
        if router.sawStrayThinkEnd { router = try route(startsInReasoning: true) }
        let starts = [startMarker] + alternateMarkers.map(\.start)
        if starts.contains(where: { find(Array($0.utf8), in: bytes, from: 0) != nil }) {
            repairs += router.notes
            return router.calls
        }
        // No block: the text after the reasoning, up to an end marker, is the body.
        let thinkStart = Array("<think>".utf8), thinkEnd = Array("</think>".utf8)
        var body = bytes[...]
        if let close = lastIndex(of: thinkEnd, in: bytes) {
            body = bytes[(close + thinkEnd.count)...]
        } else if let open = find(thinkStart, in: bytes, from: 0) {
            body = bytes[..<open]
        }
        let rest = Array(body)
        let ends = [endMarker] + alternateMarkers.map(\.end)
        let cut = ends.compactMap { find(Array($0.utf8), in: rest, from: 0) }.min() ?? rest.count
        var found: [String] = []
        let calls = try parse(String(decoding: rest[..<cut], as: UTF8.self), repairs: &found)
        for r in found {
            // Logged as the router logs what it repaired in a block.
            repairs.append("repaired a tool call: " + r)
            Log.warning("tool calls: repaired a tool call: " + r)
        }
        return calls
    }

    /// `parseText` without the repairs.
    package func parseText(_ text: String) throws -> [LeapFunctionCall] {
        var repairs: [String] = []
        return try parseText(text, repairs: &repairs)
    }

    package var alternateMarkers: [(start: String, end: String)] { [] }
}

extension FunctionCallParser {
    /// `body` (the calls as written, without markers) with every marker inside it, which can only sit
    /// in a string literal, written with its `<` as the escape `\u003c` (the same character in Python
    /// and JSON strings): a string argument holding `</tool_call>` or `<|tool_call_end|>` would
    /// otherwise end the block early for `parseText` and for the response router.
    ///
    /// The search is on UTF-8 bytes, as `parseText` and the router search: a marker followed by a combining
    /// mark or a ZWJ (or preceded by a prepended mark) shares a Character with it, and a Character search
    /// would leave it unescaped.
    func escapingMarkers(_ body: String) -> String {
        var out = Array(body.utf8)
        for marker in [startMarker, endMarker] {
            let m = Array(marker.utf8), escaped = Array(("\\u003c" + marker.dropFirst()).utf8)
            var from = 0
            while let i = find(m, in: out, from: from) {
                out.replaceSubrange(i..<(i + m.count), with: escaped)
                from = i + escaped.count
            }
        }
        return String(decoding: out, as: UTF8.self)
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

/// The last index where `needle` occurs in `haystack`.
func lastIndex(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
    var found: Int? = nil
    var from = 0
    while let i = find(needle, in: haystack, from: from) {
        found = i
        from = i + 1
    }
    return found
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
/// See `PythonLiteralParser` for the exact grammar. LFM models sometimes write a Hermes block
/// `<tool_call>{"name": ..., "arguments": ...}</tool_call>` instead; it is read as a call too.
package struct LFMFunctionCallParser: FunctionCallParser {
    package let startMarker = "<|tool_call_start|>"
    package let endMarker = "<|tool_call_end|>"
    package var alternateMarkers: [(start: String, end: String)] { [("<tool_call>", "</tool_call>")] }

    package init() {}

    package func parse(_ body: String, repairs: inout [String]) throws -> [LeapFunctionCall] {
        try PythonLiteralParser.parseCalls(body, repairs: &repairs)
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

    package func parse(_ body: String, repairs: inout [String]) throws -> [LeapFunctionCall] {
        try PythonLiteralParser.parseJSONCalls(body, repairs: &repairs)
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
