import LeapCore
import LeapJSON
import LeapMessages
import LeapToolCalls

/// History + tools -> prompt text -> token ids, the way the model's chat template wants them.
package struct PromptBuilder {
    let runner: ModelRunner

    package init(runner: ModelRunner) { self.runner = runner }

    /// LEAP's schema injection: appended to the first system message, or a new system message.
    static let schemaPreamble = "Follow the JSON schema below for your response:\n"

    package func text(for messages: [ChatMessage], tools: [LeapFunction], options: GenerationOptions) throws -> String {
        try render(PromptBuilder.replayableHistory(messages), tools: tools, options: options)
    }

    private func render(_ replayable: [ChatMessage], tools: [LeapFunction], options: GenerationOptions) throws -> String {
        var history = replayable
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

    /// The prompt of `messages` with their media parts: each image / audio part is replaced in the message
    /// text by a marker the template passes through, the rendered text is cut at the markers, the pieces
    /// are tokenized apart (as llama.cpp's mtmd does) and every marker becomes the part's layout (its marker
    /// tokens and embedding rows). `prepare(key, part)` gives the prepared part (cached by the conversation
    /// under its content key, which is hashed once here).
    /// Also returns the rendered text with the markers in it.
    package func prompt(for messages: [ChatMessage], tools: [LeapFunction], options: GenerationOptions,
                        prepare: (MediaKey, ChatMessageContent) throws -> any PreparedMedia) throws -> (Prompt, String) {
        var replayable = PromptBuilder.replayableHistory(messages)
        // A marker no user text contains: a random tag per prompt (it never reaches the tokenizer).
        let tag = String(Generation.randomSeed() & 0xffff_ffff_ffff, radix: 36)
        var parts: [ChatMessageContent] = []
        for m in replayable.indices {
            for c in replayable[m].content.indices {
                switch replayable[m].content[c] {
                case .text: continue
                case .image, .audio, .audioPCMF32:
                    parts.append(replayable[m].content[c])
                    replayable[m].content[c] = .text("<__leap_media_\(tag)_\(parts.count - 1)__>")
                }
            }
        }
        let text = try render(replayable, tools: tools, options: options)
        guard text.utf8.count <= PromptBuilder.maxPromptBytes else {
            throw LeapError(.promptExceedsContext, "the prompt is \(text.utf8.count) bytes of text, more than the \(PromptBuilder.maxPromptBytes) bytes any context can hold")
        }
        var prompt = Prompt()
        guard !parts.isEmpty else {
            prompt.append(tokens: try tokens(forText: text))
            return (prompt, text)
        }
        var rest = Substring(text)
        for (i, part) in parts.enumerated() {
            let marker = "<__leap_media_\(tag)_\(i)__>"
            guard let r = PromptBuilder.firstRange(of: marker, in: rest) else {
                throw LeapError(.generation, "the chat template dropped, repeated or reordered media part \(i) (\(parts.count) image / audio parts in the history); it must print each message's content once, in order")
            }
            let before = String(rest[rest.startIndex..<r.lowerBound])
            prompt.append(tokens: i == 0 ? try tokens(forText: before) : try piece(before))
            let key = MediaKey(part: part)
            let media = try prepare(key, part)
            prompt.media[key] = media
            for p in media.layout.pieces {
                switch p {
                case .text(let t): prompt.append(tokens: try piece(t))
                case .rows(let rows): prompt.append(rows: rows, of: key)
                }
            }
            rest = rest[r.upperBound...]
        }
        prompt.append(tokens: try piece(String(rest)))
        return (prompt, text)
    }

    /// The first occurrence of `needle` in `text` (byte-wise UTF-8 search).
    static func firstRange(of needle: String, in text: Substring) -> Range<Substring.Index>? {
        let n = Array(needle.utf8)
        let u = text.utf8
        guard let first = n.first, u.count >= n.count else { return nil }
        var i = u.startIndex
        while let j = u[i...].firstIndex(of: first) {
            var a = j, k = 0
            while k < n.count, a < u.endIndex, u[a] == n[k] { a = u.index(after: a); k += 1 }
            if k == n.count { return j..<a }
            i = u.index(after: j)
        }
        return nil
    }

    /// Text between or inside media: special tokens parsed, no BOS.
    private func piece(_ text: String) throws -> [Int32] {
        if text.isEmpty { return [] }
        return try runner.tokenizer.tokenize(text, addSpecial: false, parseSpecial: true)
    }

    /// Longest prompt text tokenized (256 MiB).
    package static let maxPromptBytes = 1 << 28

    package func tokens(forText prompt: String) throws -> [Int32] {
        // The tokenizer keeps byte positions in 32 bits; no context comes near this anyway.
        guard prompt.utf8.count <= PromptBuilder.maxPromptBytes else {
            throw LeapError(.promptExceedsContext, "the prompt is \(prompt.utf8.count) bytes of text, more than the \(PromptBuilder.maxPromptBytes) bytes any context can hold")
        }
        var text = prompt
        // Templates print bos_token themselves; don't let the tokenizer add a second one. Bytes, as the
        // tokenizer matches special tokens: content right after the BOS that starts with a combining mark
        // or a ZWJ makes one Character with its ">", and a Character prefix test would miss the BOS.
        let bos = runner.tokenizer.bosText
        if runner.tokenizer.addsBOS, !bos.isEmpty, prompt.utf8.starts(with: bos.utf8) {
            text = String(decoding: Array(prompt.utf8.dropFirst(bos.utf8.count)), as: UTF8.self)
        }
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
