import LeapCore
import LeapGGUF
import LeapMessages
import LeapModels
import LeapTokenizer

// The projector (mmproj) of a multimodal model as the runtime's media encoder: its `clip.projector_type`
// says which encoder it holds.

enum MediaEncoders {
    /// Loads the encoder of `projector` for `textModel` (its rows must be the text model's width).
    static func load(projector path: String, textModel: LanguageModel, tokenizer: Tokenizer, threads: Int?) throws -> any MediaEncoderBackend {
        let file = try GGUFFile(path: path)
        guard let type = try file.optionalString("clip.projector_type") else {
            throw LeapError(.modelLoading, "'\(path)' has no clip.projector_type (not a projector llama.cpp's converter wrote)")
        }
        switch type {
        default:
            throw LeapError(.unsupported, "'\(path)': projector type '\(type)' is not supported (supported: lfm2 for LFM2-VL images, lfm2a for LFM2-Audio)")
        }
    }
}
