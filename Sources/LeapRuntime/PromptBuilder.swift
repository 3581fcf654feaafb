import LeapCore
import LeapJSON
import LeapMessages

/// History + tools -> prompt text -> token ids, the way the model's chat template wants them.
package struct PromptBuilder {
    let runner: ModelRunner

    /// LEAP's schema injection: appended to the first system message, or a new system message.
    static let schemaPreamble = "Follow the JSON schema below for your response:\n"

    package func text(for messages: [ChatMessage], tools: [JSONValue], options: GenerationOptions) throws -> String {
        var history = messages
        if let schema = options.jsonSchemaConstraint, options.injectSchemaIntoPrompt {
            history = PromptBuilder.injectSchema(schema, into: history)
        }
        var variables = JSONObject()
        variables.set("bos_token", .string(runner.tokenizer.bosText))
        variables.set("eos_token", .string(runner.tokenizer.eosText))
        variables.set("enable_thinking", .bool(options.enableThinking))
        let json = try history.map { try templateMessage($0, parser: options.functionCallParser) }
        return try runner.template.render(messages: json, tools: tools.isEmpty ? nil : tools,
                                          addGenerationPrompt: true, variables: variables)
    }

    package func tokens(for messages: [ChatMessage], tools: [JSONValue], options: GenerationOptions) throws -> [Int32] {
        var text = try text(for: messages, tools: tools, options: options)
        // Templates print bos_token themselves; don't let the tokenizer add a second one.
        let bos = runner.tokenizer.bosText
        if runner.tokenizer.addsBOS, !bos.isEmpty, text.hasPrefix(bos) { text.removeFirst(bos.count) }
        return try runner.tokenizer.tokenize(text, addSpecial: true, parseSpecial: true)
    }

    /// LEAP (§6.9): "\n\nFollow the JSON schema below for your response:\n<schema>" appended to the first
    /// system message, or a new system message "Follow the JSON schema below ...:\n<schema>"; skipped when
    /// the schema text is already there (whitespace-insensitive).
    package static func injectSchema(_ schema: String, into history: [ChatMessage]) -> [ChatMessage] {
        func squash(_ s: String) -> String { String(s.unicodeScalars.filter { !$0.properties.isWhitespace }.map(Character.init)) }
        let needle = squash(schema)
        if history.contains(where: { m in m.role == .system && squash(m.text).contains(needle) }) { return history }
        var out = history
        if let i = out.firstIndex(where: { $0.role == .system }) {
            out[i].content.append(.text("\n\n" + schemaPreamble + schema))
        } else {
            out.insert(ChatMessage(role: .system, text: schemaPreamble + schema), at: 0)
        }
        return out
    }

    /// One message as Hugging Face chat templates expect it.
    func templateMessage(_ m: ChatMessage, parser: FunctionCallParserKind) throws -> JSONValue {
        var o = JSONObject()
        o.set("role", .string(m.role.rawValue))
        let textOnly = m.content.allSatisfy { $0.textValue != nil }
        if textOnly {
            o.set("content", .string(m.text))
        } else {
            o.set("content", .array(m.content.map { part -> JSONValue in
                switch part {
                case .text(let t): return .object(JSONObject([("type", .string("text")), ("text", .string(t))]))
                case .image: return .object(JSONObject([("type", .string("image"))]))
                case .audio, .audioPCMF32: return .object(JSONObject([("type", .string("audio"))]))
                }
            }))
        }
        if let r = m.reasoningContent { o.set("reasoning_content", .string(r)) }
        if let calls = m.functionCalls, !calls.isEmpty {
            o.set("tool_calls", .array(calls.map { c in
                .object(JSONObject([
                    ("type", .string("function")),
                    ("function", .object(JSONObject([("name", .string(c.name)), ("arguments", .object(c.arguments))]))),
                ]))
            }))
        }
        return .object(o)
    }
}
