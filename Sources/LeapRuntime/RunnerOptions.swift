import LeapBundles
import LeapPromptCache

/// How to load a model (LEAP `LiquidInferenceEngineOptions` / `ModelLoadingOptions`).
package struct RunnerOptions: Sendable {
    /// CPU threads for matrix work; nil = physical cores.
    package var threads: Int?
    /// Tokens per conversation; nil = min(trained context, 4096).
    package var contextSize: Int?
    /// Jinja chat template overriding the model's own.
    package var chatTemplate: String?
    /// Companion files of multimodal models (vision / audio projector, audio decoder and tokenizer).
    package var mmprojPath: String?
    package var audioDecoderPath: String?
    package var audioTokenizerPath: String?
    /// Find companions next to the model when the paths are nil (LEAP's auto-detection).
    package var autoDetectCompanionFiles = true
    /// Sampling defaults of the model's generations (a bundle manifest's `sampling_parameters`); a field left
    /// nil keeps the GGUF's `general.sampling.*` value, else the runtime's default.
    package var defaultSampling = BundleSampling()
    /// The prompt cache (LEAP CacheOptions; off by default).
    package var cache = PromptCacheOptions()
    /// A draft model for speculative decoding: a GGUF sharing the model's vocabulary (checked at load),
    /// used by generations that ask for it or leave the drafter unset.
    package var draftModelPath: String?

    package init() {}
}
