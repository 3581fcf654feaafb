import LeapAudio
import LeapCore
import LeapJSON
import LeapModels

// The seams between the conversation runtime and the engine. LeapModels, LeapTokenizer and
// LeapChatTemplate provide the real implementations (adapters in ModelLoader.swift; the media encoders'
// seam is MediaBackend.swift); tests also plug in scripted ones to drive the runtime token by token.

/// A loaded model's weights: immutable, shared by every conversation of a runner.
package protocol LanguageModelBackend: AnyObject {
    var architecture: String { get }
    var vocabularySize: Int { get }
    /// The context length the model was trained with (`<arch>.context_length`).
    var trainedContextLength: Int { get }
    /// Width of an embedding row (`InferenceSessionBackend.evaluate(embeddings:)`).
    var embeddingLength: Int { get }
    /// A fresh evaluation state (KV cache, recurrent state) holding up to `contextSize` tokens.
    func makeSession(contextSize: Int) throws -> any InferenceSessionBackend
}

/// One evaluation state: the tokens evaluated so far and the logits of the last one.
package protocol InferenceSessionBackend: AnyObject {
    var contextSize: Int { get }
    /// Tokens currently in the cache.
    var tokenCount: Int { get }
    /// Evaluates `tokens` at positions tokenCount..., leaving the logits of the last one readable.
    /// `shouldStop` is polled between chunks of a long prompt; returning true ends early by throwing
    /// `LeapError(.cancelled)`, with `tokenCount` covering the tokens evaluated so far.
    func evaluate(_ tokens: [Int32], shouldStop: () -> Bool) throws
    /// Evaluates embedding rows ([n, embeddingLength]: media encodings, generated audio frames) at the next
    /// positions, like tokens. `outputHead: false` leaves the logits unset (only `lastHiddenState` is read).
    func evaluate(embeddings rows: [Float], outputHead: Bool, shouldStop: () -> Bool) throws
    /// The final-normed hidden state of the last evaluated position ([embeddingLength]).
    func lastHiddenState() throws -> [Float]
    /// Logits of the last evaluated token ([vocabularySize]); valid and writable until the next evaluate.
    func lastLogits() -> UnsafeMutableBufferPointer<Float>
    /// Keeps the first `n` tokens and forgets the rest.
    func truncate(to n: Int) throws
    /// Most tokens one `verify` pass takes (0: this backend does not verify drafts).
    var maxVerifiedTokens: Int { get }
    /// Speculative decoding: evaluates `tokens` (an accepted token, then drafted ones) at the next positions
    /// in one pass, keeping the logits of every one; afterwards `lastLogits()` are those after tokens[0]
    /// (as after `evaluate([tokens[0]])`). The caller takes the drafts it accepts with `selectVerified` and
    /// `truncate`s the rest away.
    func verify(_ tokens: [Int32]) throws
    /// Makes the logits after tokens[0...i] of the last `verify` the `lastLogits()`.
    func selectVerified(_ i: Int) throws
    /// How many sessions shared the forward pass of the last one-token `evaluate` or `verify` (this one
    /// included; 1 for a backend that steps each session alone). Speculation weighs its extra rows against
    /// the other sessions' tokens by it.
    var lastPassSequences: Int { get }
    /// Audio the model generated during the evaluations since the last call, oldest first (models that
    /// speak, e.g. interleaved text-and-audio output; text models have none). The runtime streams each
    /// chunk right after the text of the token whose evaluation produced it and collects the turn's audio
    /// into the assistant message. A turn's chunks must share one sample rate.
    func takeGeneratedAudio() -> [AudioChunk]
    /// The generation using this state ended: it evaluates no more tokens soon (a backend that steps the
    /// tokens of several sessions together stops waiting for this one).
    func endDecoding()
    /// The shape of this session's state (nil when it cannot save and restore state: no prompt cache).
    var stateShape: ContextStateShape? { get }
    /// A copy of the state of the first `n` positions (the prompt cache's snapshots).
    func captureState(positions n: Int) throws -> ContextState
    /// Replaces the session's positions with `state` (checked first: on a throw nothing changed).
    func restoreState(_ state: ContextState) throws
}

extension InferenceSessionBackend {
    package var lastPassSequences: Int { 1 }

    package func evaluate(embeddings rows: [Float], outputHead: Bool, shouldStop: () -> Bool) throws {
        throw LeapError(.unsupported, "this model takes no embedding input")
    }

    package func evaluate(embeddings rows: [Float], shouldStop: () -> Bool) throws {
        try evaluate(embeddings: rows, outputHead: true, shouldStop: shouldStop)
    }

    package func lastHiddenState() throws -> [Float] {
        throw LeapError(.unsupported, "this model gives no hidden state")
    }

    /// Text models generate no audio.
    package func takeGeneratedAudio() -> [AudioChunk] { [] }

    package func endDecoding() {}

    package var maxVerifiedTokens: Int { 0 }
    package func verify(_ tokens: [Int32]) throws {
        throw LeapError(.unsupported, "this model's sessions do not verify drafted tokens")
    }
    package func selectVerified(_ i: Int) throws {
        throw LeapError(.unsupported, "this model's sessions do not verify drafted tokens")
    }

    package var stateShape: ContextStateShape? { nil }
    package func captureState(positions n: Int) throws -> ContextState {
        throw LeapError(.unsupported, "this model's sessions cannot save their state")
    }
    package func restoreState(_ state: ContextState) throws {
        throw LeapError(.unsupported, "this model's sessions cannot restore a saved state")
    }
}

/// Text <-> token ids for one vocabulary.
package protocol TokenizerBackend: AnyObject {
    var vocabularySize: Int { get }
    /// Text of the BOS / EOS tokens as chat templates expect them (`bos_token`, `eos_token`).
    var bosText: String { get }
    var eosText: String { get }
    /// Whether the vocabulary adds BOS when asked for special tokens.
    var addsBOS: Bool { get }
    func tokenize(_ text: String, addSpecial: Bool, parseSpecial: Bool) throws -> [Int32]
    /// The bytes a token stands for, with special tokens rendered as their text (e.g. "<|im_end|>").
    func piece(_ token: Int32) -> [UInt8]
    /// True for control / special tokens (which arrive whole: tool-call and think markers).
    func isSpecial(_ token: Int32) -> Bool
    func isEndOfGeneration(_ token: Int32) -> Bool
}

/// A chat template: messages (OpenAI-shaped JSON) to prompt text.
package protocol ChatTemplateBackend: AnyObject {
    func render(messages: [JSONValue], tools: [JSONValue]?, addGenerationPrompt: Bool, variables: JSONObject) throws -> String
}
