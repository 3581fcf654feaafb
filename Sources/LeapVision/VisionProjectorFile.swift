// VisionProjectorFile: the hyper-parameters of an LFM2-VL vision projector GGUF ("mmproj": llama.cpp's clip
// format, projector type `lfm2`), read from its clip.* metadata and validated before any tensor is bound.
import LeapCore
import LeapGGUF

/// What an LFM2-VL mmproj says about its SigLIP2 vision tower and projector.
package struct VisionProjectorConfig: Sendable, Equatable {
    /// Width of the vision tower, D (`clip.vision.embedding_length`).
    package let hiddenSize: Int
    /// Width of the vision MLP (`clip.vision.feed_forward_length`).
    package let feedForwardSize: Int
    /// Vision blocks (`clip.vision.block_count`).
    package let layerCount: Int
    /// Attention heads (`clip.vision.attention.head_count`); head width = hiddenSize / headCount.
    package let headCount: Int
    /// LayerNorm epsilon of the vision blocks and post_ln (`clip.vision.attention.layer_norm_epsilon`).
    package let layerNormEps: Float
    /// Width of the embeddings given to the text model (`clip.vision.projection_dim`).
    package let projectionDim: Int
    /// Pixels per patch side (`clip.vision.patch_size`, 16).
    package let patchSize: Int
    /// Patches per merged token side (`clip.vision.projector.scale_factor`, 2).
    package let downsampleFactor: Int
    /// Per-channel normalization the pixels were given: (v / 255 − mean) / std.
    package let imageMean: [Float]
    package let imageStd: [Float]

    package var headDim: Int { hiddenSize / headCount }
    /// Width of a merged token before the projector (downsample² patches).
    package var mergedSize: Int { hiddenSize * downsampleFactor * downsampleFactor }

    /// The projector LayerNorm's epsilon: PyTorch's nn.LayerNorm default, which llama.cpp hard-codes too.
    package static let projectorNormEps: Float = 1e-5

    /// Reads and validates the metadata of `file`; a file that is not an LFM2-VL vision projector is
    /// rejected with an error saying what it is.
    package init(file: GGUFFile) throws {
        let path = file.path
        let arch = try file.optionalString("general.architecture")
        guard arch == "clip" else {
            let what = arch.map { "general.architecture is '\($0)'" } ?? "it has no general.architecture"
            throw LeapError.modelLoading(
                "'\(path)' is not a vision projector (mmproj) GGUF: \(what), expected 'clip'")
        }
        let projector = try file.optionalString("clip.vision.projector_type") ?? file.optionalString("clip.projector_type")
        guard try file.optionalBool("clip.has_vision_encoder") == true else {
            let audio = try file.optionalBool("clip.has_audio_encoder") == true
            let kind = audio ? "an audio encoder mmproj" : "an mmproj without a vision encoder"
            throw LeapError.modelLoading(
                "'\(path)' is \(kind) (projector type '\(projector ?? "none")', clip.has_vision_encoder is not true); "
                    + "LFM2-VL needs a vision projector of type 'lfm2'")
        }
        guard let projector else {
            throw LeapError.modelLoading("'\(path)' has no clip.projector_type; LFM2-VL needs 'lfm2'")
        }
        guard projector == "lfm2" else {
            throw LeapError.unsupported(
                "'\(path)' is a vision projector of type '\(projector)'; only LFM2-VL's 'lfm2' is supported")
        }

        func positive(_ key: String, max limit: Int) throws -> Int {
            let v = try file.int(key)
            guard v > 0, v <= limit else {
                throw LeapError.modelLoading("'\(path)': \(key) = \(v) is out of range 1...\(limit)")
            }
            return v
        }
        hiddenSize = try positive("clip.vision.embedding_length", max: 1 << 16)
        feedForwardSize = try positive("clip.vision.feed_forward_length", max: 1 << 18)
        layerCount = try positive("clip.vision.block_count", max: 1024)
        headCount = try positive("clip.vision.attention.head_count", max: 1024)
        projectionDim = try positive("clip.vision.projection_dim", max: 1 << 18)
        patchSize = try positive("clip.vision.patch_size", max: 1024)
        downsampleFactor = try file.optionalInt("clip.vision.projector.scale_factor") ?? 2
        guard (1...16).contains(downsampleFactor) else {
            throw LeapError.modelLoading(
                "'\(path)': clip.vision.projector.scale_factor = \(downsampleFactor) is out of range 1...16")
        }
        guard hiddenSize % headCount == 0 else {
            throw LeapError.modelLoading(
                "'\(path)': embedding length \(hiddenSize) is not a multiple of the \(headCount) attention heads")
        }
        layerNormEps = try file.optionalFloat("clip.vision.attention.layer_norm_epsilon") ?? 1e-6
        guard layerNormEps.isFinite, layerNormEps > 0 else {
            throw LeapError.modelLoading("'\(path)': layer_norm_epsilon \(layerNormEps) must be a positive number")
        }
        imageMean = try file.optionalFloatArray("clip.vision.image_mean") ?? [0.5, 0.5, 0.5]
        imageStd = try file.optionalFloatArray("clip.vision.image_std") ?? [0.5, 0.5, 0.5]
        guard imageMean.count == 3, imageStd.count == 3, imageMean.allSatisfy(\.isFinite),
              imageStd.allSatisfy({ $0.isFinite && $0 != 0 }) else {
            throw LeapError.modelLoading(
                "'\(path)': image_mean \(imageMean) / image_std \(imageStd) must be 3 finite values (std non-zero)")
        }
    }
}
