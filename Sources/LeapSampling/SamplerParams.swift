// Sampling settings with llama.cpp's meaning for every field (see Sampler.swift for the chain order).

package struct SamplerParams: Sendable, Equatable {
    /// Softmax temperature applied last, just before drawing. `<= 0` means greedy (argmax).
    package var temperature: Float = 0.8
    /// Keep the `topK` most likely tokens; `<= 0` disables the stage.
    package var topK: Int = 40
    /// Nucleus: keep the smallest set of most likely tokens whose probability sums to `>= topP`; `>= 1` disables.
    package var topP: Float = 0.95
    /// Keep tokens with probability `>= minP * p_max`; `<= 0` disables.
    package var minP: Float = 0.05
    /// Multiplicative repetition penalty (1 = off): positive logits are divided by it, negative multiplied.
    package var repetitionPenalty: Float = 1.0
    /// Subtracted once per occurrence in the penalty window (OpenAI-style frequency penalty).
    package var frequencyPenalty: Float = 0
    /// Subtracted once for any token present in the penalty window.
    package var presencePenalty: Float = 0
    /// How many of the most recent tokens the penalties look at; 0 disables penalties, -1 = all accepted tokens.
    package var penaltyLastN: Int = 64
    /// Each filtering stage keeps at least this many tokens.
    package var minKeep: Int = 1
    /// RNG seed; the same seed, params and logits give the same tokens.
    package var seed: UInt64 = 0

    package init() {}

    /// Greedy decoding (no randomness).
    package static var greedy: SamplerParams {
        var p = SamplerParams()
        p.temperature = 0
        return p
    }
}
