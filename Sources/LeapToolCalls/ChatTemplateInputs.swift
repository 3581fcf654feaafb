import LeapCore
import LeapJSON
import LeapMessages

/// What a Hugging Face chat template receives for a conversation: `messages` and `tools`, OpenAI-shaped.
///
/// Messages: `{"role", "content"}` with `content` a string when the message is text only (LFM2's
/// templates `tojson` anything else), or a list of parts `{"type":"text","text":...}`, `{"type":"image"}`,
/// `{"type":"audio"}` (raw PCM parts are audio too) when it has media. Assistant messages add
/// `tool_calls: [{"type":"function","function":{"name","arguments":<object>}}]` and, with reasoning,
/// `reasoning_content` (Qwen3) and `thinking` (LFM2.5): templates read the one they know.
/// Tools: `LeapFunction.toolJSON` of each registered function, in order.
package struct ChatTemplateInputs: Equatable, Sendable {
    package var messages: [JSONValue]
    package var tools: [JSONValue]

    /// Builds the inputs.
    ///
    /// - `parser`: the conversation's function-call parser. LEAP rule 8.11: a non-assistant message that
    ///   carries function calls gets `parser.dump(calls)` prepended to its text (an error if `parser` is
    ///   nil).
    /// - `templateRendersToolCalls`: false for templates that ignore `tool_calls` (LFM2, LFM2.5-1.2B);
    ///   then an assistant's calls are written into its content with `parser.dump` (after the text, as
    ///   LFM2.5 templates that do render them place them), so the model still sees its own past calls.
    ///   `templateRendersToolCalls(source:)` decides it from the template text.
    package static func build(messages: [ChatMessage], functions: [LeapFunction], parser: (any FunctionCallParser)?,
                              templateRendersToolCalls: Bool = true) throws -> ChatTemplateInputs {
        var out: [JSONValue] = []
        out.reserveCapacity(messages.count)
        for (i, m) in messages.enumerated() {
            var prefix = ""
            var suffix = ""
            var toolCalls: [LeapFunctionCall] = []
            if let calls = m.functionCalls, !calls.isEmpty {
                if m.role != .assistant {
                    guard let parser else {
                        throw LeapError(.functionCallParsing,
                                        "history[\(i)]: a \(m.role.rawValue) message carries function calls, which are written into the prompt with the function-call parser, but the parser is none")
                    }
                    prefix = parser.dump(calls)
                } else if !templateRendersToolCalls, let parser {
                    suffix = parser.dump(calls)
                } else {
                    toolCalls = calls
                }
            }
            var o = JSONObject()
            o.set("role", .string(m.role.rawValue))
            o.set("content", contentJSON(m.content, prefix: prefix, suffix: suffix))
            if !toolCalls.isEmpty {
                o.set("tool_calls", .array(toolCalls.map { c in
                    .object(JSONObject([
                        ("type", .string("function")),
                        ("function", .object(JSONObject([("name", .string(c.name)), ("arguments", .object(c.arguments))]))),
                    ]))
                }))
            }
            if m.role == .assistant, let r = m.reasoningContent, !r.isEmpty {
                o.set("reasoning_content", .string(r))
                o.set("thinking", .string(r))
            }
            out.append(.object(o))
        }
        return ChatTemplateInputs(messages: out, tools: functions.map { $0.toolJSON })
    }

    /// Whether a template's source renders assistant `tool_calls` itself (it mentions the field).
    package static func templateRendersToolCalls(source: String) -> Bool {
        source.contains("tool_calls")
    }

    private static func contentJSON(_ parts: [ChatMessageContent], prefix: String, suffix: String) -> JSONValue {
        let textOnly = parts.allSatisfy { $0.textValue != nil }
        if textOnly {
            return .string(prefix + parts.compactMap { $0.textValue }.joined() + suffix)
        }
        var items: [JSONValue] = []
        func text(_ t: String) -> JSONValue { .object(JSONObject([("type", .string("text")), ("text", .string(t))])) }
        if !prefix.isEmpty { items.append(text(prefix)) }
        for p in parts {
            switch p {
            case .text(let t): items.append(text(t))
            case .image: items.append(.object(JSONObject([("type", .string("image"))])))
            case .audio, .audioPCMF32: items.append(.object(JSONObject([("type", .string("audio"))])))
            }
        }
        if !suffix.isEmpty { items.append(text(suffix)) }
        return .array(items)
    }
}
