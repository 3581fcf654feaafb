import LeapMessages

/// Why a generation ended (LEAP `GenerationFinishReason`; raw values are the C enum).
package enum GenerationFinishReason: Int32, Sendable {
    /// The model ended its turn (an end-of-generation token).
    case stop = 0
    /// The context window filled up during generation.
    case exceedContext = 1
    /// Stopped by the caller (`stop()`, or a callback asking to stop).
    case interrupted = 2
    /// The JSON-schema constraint completed its value and ended the generation.
    case constraint = 3
    /// Generation failed; the assistant message is not added to the history.
    case error = 4
    /// `maxTokens` completion tokens were generated (an extension of LEAP's set).
    case maxTokens = 5

    package var name: String {
        switch self {
        case .stop: return "STOP"
        case .exceedContext: return "EXCEED_CONTEXT"
        case .interrupted: return "INTERRUPTED"
        case .constraint: return "CONSTRAINT"
        case .error: return "ERROR"
        case .maxTokens: return "MAX_TOKENS"
        }
    }
}

/// Figures of one generation (LEAP `GenerationStats`, plus timings).
package struct GenerationStats: Sendable, Equatable {
    /// Prompt tokens evaluated for this turn (excluding those reused from the cache).
    package var promptTokens: Int = 0
    package var completionTokens: Int = 0
    /// promptTokens + completionTokens.
    package var totalTokens: Int { promptTokens + completionTokens }
    /// Completion tokens per second of decoding (after the first token).
    package var tokensPerSecond: Double = 0
    /// Prompt positions whose state was reused from the previous turn or restored from the prompt cache.
    package var cachedPromptTokens: Int = 0
    /// Seconds from the start of the call to the first generated token.
    package var timeToFirstToken: Double = 0
    /// Prompt tokens per second during prefill.
    package var promptTokensPerSecond: Double = 0
    /// Speculative decoding: tokens drafted and verified, and how many of them were accepted (each accepted
    /// one is a completion token that took no forward pass of its own).
    package var draftedTokens: Int = 0
    package var acceptedDraftTokens: Int = 0
}

/// One item of a streamed response, in order; `.complete` is always last.
package enum GenerationEvent: Sendable {
    case chunk(String)
    /// A generated text token (only when `GenerationOptions.topLogprobs` is set), before the text it makes:
    /// its bytes (possibly part of a UTF-8 character), its log-probability under the model's raw logits and
    /// the most likely alternatives, most likely first.
    case token(SampledToken)
    case reasoningChunk(String)
    case functionCalls([LeapFunctionCall])
    case audioSample(samples: [Float], sampleRate: Int)
    case complete(message: ChatMessage, finishReason: GenerationFinishReason, stats: GenerationStats)
}

/// A generated token as `.token` events report it.
package struct SampledToken: Sendable, Equatable {
    package var id: Int32
    package var bytes: [UInt8]
    package var logprob: Float
    package var top: [(id: Int32, bytes: [UInt8], logprob: Float)]

    package init(id: Int32, bytes: [UInt8], logprob: Float, top: [(id: Int32, bytes: [UInt8], logprob: Float)]) {
        self.id = id
        self.bytes = bytes
        self.logprob = logprob
        self.top = top
    }

    package static func == (a: SampledToken, b: SampledToken) -> Bool {
        a.id == b.id && a.bytes == b.bytes && a.logprob == b.logprob && a.top.count == b.top.count
            && zip(a.top, b.top).allSatisfy { $0.id == $1.id && $0.bytes == $1.bytes && $0.logprob == $1.logprob }
    }
}
