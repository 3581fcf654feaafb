import LeapCore
import LeapJSON
import LeapMessages
import LeapToolCalls

/// History + tools -> prompt text -> token ids, the way the model's chat template wants them.
package struct PromptBuilder {
    let runner: ModelRunner

    /// LEAP's schema injection: appended to the first system message, or a new system message.
    static let schemaPreamble = "Follow the JSON schema below for your response:\n"

    package func text(for messages: [ChatMessage], tools: [LeapFunction], options: GenerationOptions) throws -> String {
        var history = PromptBuilder.replayableHistory(messages)
        if let schema = options.jsonSchemaConstraint, options.injectSchemaIntoPrompt {
            history = PromptBuilder.injectSchema(schema, into: history)
        }
        var variables = JSONObject()
        variables.set("bos_token", .string(runner.tokenizer.bosText))
        variables.set("eos_token", .string(runner.tokenizer.eosText))
        variables.set("enable_thinking", .bool(options.enableThinking))
        let inputs = try ChatTemplateInputs.build(
            messages: history, functions: tools, parser: options.functionCallParser?.parser,
            templateRendersToolCalls: ChatTemplateInputs.templateRendersToolCalls(source: runner.templateSource))
        return try runner.template.render(messages: inputs.messages, tools: inputs.tools.isEmpty ? nil : inputs.tools,
                                          addGenerationPrompt: true, variables: variables)
    }

    package func tokens(for messages: [ChatMessage], tools: [LeapFunction], options: GenerationOptions) throws -> [Int32] {
        try tokens(forText: try text(for: messages, tools: tools, options: options))
    }

    /// Longest prompt text tokenized (256 MiB).
    package static let maxPromptBytes = 1 << 28

    package func tokens(forText prompt: String) throws -> [Int32] {
        // The tokenizer keeps byte positions in 32 bits; no context comes near this anyway.
        guard prompt.utf8.count <= PromptBuilder.maxPromptBytes else {
            throw LeapError(.promptExceedsContext, "the prompt is \(prompt.utf8.count) bytes of text, more than the \(PromptBuilder.maxPromptBytes) bytes any context can hold")
        }
        var text = prompt
        // Templates print bos_token themselves; don't let the tokenizer add a second one.
        let bos = runner.tokenizer.bosText
        if runner.tokenizer.addsBOS, !bos.isEmpty, text.hasPrefix(bos) { text.removeFirst(bos.count) }
        return try runner.tokenizer.tokenize(text, addSpecial: true, parseSpecial: true)
    }

    /// The history as a text engine replays it: the audio an assistant generated (its audio_pcm_f32 part,
    /// LEAP §2.8) is not input the model can read; the model sees the turn's text, as it wrote it.
    static func replayableHistory(_ messages: [ChatMessage]) -> [ChatMessage] {
        messages.map { m in
            guard m.role == .assistant else { return m }
            var text = m
            text.content.removeAll { part in
                switch part {
                case .audio, .audioPCMF32: return true
                case .text, .image: return false
                }
            }
            return text
        }
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
}
