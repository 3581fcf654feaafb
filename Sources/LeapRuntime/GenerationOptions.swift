import LeapSpeech
import LeapToolCalls

/// Per-request generation settings (LEAP `GenerationOptions`). `nil` means "the model's default"
/// (the GGUF's `general.sampling.*` keys when present, else the runtime's defaults).
package struct GenerationOptions: Sendable {
    package var temperature: Float?
    package var topP: Float?
    package var minP: Float?
    package var topK: Int?
    package var repetitionPenalty: Float?
    /// OpenAI's penalties (-2...2 there; 0 = off): minus count * frequencyPenalty, and minus presencePenalty
    /// once, for each token in the sampler's penalty window (the last 64 prompt and generated tokens, as
    /// llama.cpp's server counts them). nil = 0.
    package var frequencyPenalty: Float?
    package var presencePenalty: Float?
    package var rngSeed: UInt64?
    /// Cap on completion tokens (the prompt is not counted); nil = until end of turn or context.
    package var maxTokens: Int?
    /// JSON Schema text; when set, decoding is constrained so the output is a JSON value valid against it.
    package var jsonSchemaConstraint: String?
    /// Also tell the model about the schema in the system prompt (LEAP's exact text).
    package var injectSchemaIntoPrompt: Bool = true
    /// How tool calls are recognised in the output (and written back into prompts); nil = no parsing.
    package var functionCallParser: FunctionCallParserKind? = .lfm
    /// A tool call that does not parse completes the turn with its text (markers removed) as content and
    /// a warning in the log, as vLLM and llama.cpp's server do; off (LEAP's behaviour): the generation
    /// fails with `.functionCallParsing`.
    package var unparsedFunctionCallsAsText: Bool = false
    /// Emit reasoning (with its `<think>` tags) as ordinary text chunks; reasoning content is still filled.
    package var inlineThinkingTags: Bool = false
    /// Passed to the chat template (`enable_thinking`) for reasoning-capable models.
    package var enableThinking: Bool = false
    /// Models that speak: how audio codes are sampled (nil = Liquid's runner: temperature 0.8, top-k 4
    /// interleaved / 64 sequential; temperature 0 or top-k 1 is greedy) and the output mode (nil = from the
    /// system prompt, as the runner chooses it).
    package var audioTemperature: Float?
    package var audioTopK: Int?
    package var audioMode: SpeechOutputMode?
    /// Report each generated text token with its log-probability and this many most likely alternatives
    /// (`.token` events before the text they make); nil = no such events.
    package var topLogprobs: Int?

    /// Speculative decoding: who drafts the tokens the model verifies several at a time (nil = the runner's
    /// draft model when it was loaded with one, else none). Output does not change with it: greedy
    /// decoding gives the same tokens, sampling draws from the same distribution with the same draws.
    package var drafter: DrafterChoice?
    /// Most tokens drafted for one verification pass (nil = 8; at most the backend's pass size - 1).
    package var maxDraftTokens: Int?

    package init() {}
}

/// Who drafts tokens for speculative decoding.
package enum DrafterChoice: Sendable {
    /// No speculation: one token per forward pass.
    case none
    /// Prompt lookup: continuations of earlier occurrences of the last tokens, in the prompt and the output.
    case ngram
    /// The runner's draft model (an error when it has none).
    case draftModel
    /// A drafter of the caller's (tests).
    case custom(@Sendable () -> any TokenDrafter)
}
