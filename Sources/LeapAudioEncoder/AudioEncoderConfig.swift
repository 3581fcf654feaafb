// AudioEncoderConfig: the hyper-parameters of an lfm2a mmproj (clip.audio.* metadata, cross-checked against
// the tensor shapes by the loaders).
import LeapCore
import LeapGGUF
import LeapKernels

struct AudioEncoderConfig: Sendable, Equatable {
    var melBins: Int              // clip.audio.num_mel_bins (128)
    var modelDim: Int             // d_model: clip.audio.embedding_length (512)
    var layerCount: Int           // clip.audio.block_count (17)
    var headCount: Int            // clip.audio.attention.head_count (8)
    var ffnHidden: Int            // from a.blk.0.ffn_up (2048)
    var convKernel: Int           // from a.blk.0.conv_dw (9)
    var subsamplingChannels: Int  // from a.conv1d.0 (256)
    var adapterHidden: Int        // from mm.a.mlp.1 (2048)
    var outputDim: Int            // clip.audio.projection_dim: the text model's hidden size
    var eps: Float                // clip.audio.attention.layer_norm_epsilon (1e-5)

    var headDim: Int { modelDim / headCount }
    /// Frequency bins after the three stride-2 convolutions (128 → 64 → 32 → 16).
    var subsampledBins: Int { ConvSubsampling.halved(ConvSubsampling.halved(ConvSubsampling.halved(melBins))) }

    /// Reads and validates the metadata of `file`: an mmproj (`clip`) with an `lfm2a` audio projector.
    static func read(_ file: GGUFFile) throws -> AudioEncoderConfig {
        let arch = try file.optionalString("general.architecture")
        guard arch == "clip" else {
            throw LeapError.modelLoading(
                "\(file.path) is not a multimodal projector: general.architecture is \(arch.map { "'\($0)'" } ?? "missing"), expected 'clip'")
        }
        let projector = try file.optionalString("clip.audio.projector_type") ?? file.optionalString("clip.projector_type")
        guard projector == "lfm2a" else {
            throw LeapError(
                .unsupported,
                "\(file.path) has projector type \(projector.map { "'\($0)'" } ?? "(none)"), expected 'lfm2a' (LFM2-Audio's audio encoder)")
        }
        guard try file.optionalBool("clip.has_audio_encoder") == true else {
            throw LeapError.modelLoading("\(file.path) has no audio encoder (clip.has_audio_encoder is not true)")
        }
        func positive(_ key: String) throws -> Int {
            guard let v = try file.optionalInt(key) else {
                throw LeapError.modelLoading("missing metadata key '\(key)' in \(file.path)")
            }
            guard v > 0, v <= 1 << 20 else {
                throw LeapError.modelLoading("metadata '\(key)' = \(v) is out of range in \(file.path)")
            }
            return v
        }
        let b = TensorBinder(file: file)
        var c = AudioEncoderConfig(
            melBins: try positive("clip.audio.num_mel_bins"),
            modelDim: try positive("clip.audio.embedding_length"),
            layerCount: try positive("clip.audio.block_count"),
            headCount: try positive("clip.audio.attention.head_count"),
            ffnHidden: 0, convKernel: 0, subsamplingChannels: 0, adapterHidden: 0,
            outputDim: try positive("clip.audio.projection_dim"),
            eps: try file.optionalFloat("clip.audio.attention.layer_norm_epsilon") ?? 1e-5)
        guard c.modelDim % c.headCount == 0, c.headDim % 2 == 0 else {
            throw LeapError.modelLoading(
                "d_model \(c.modelDim) is not a multiple of \(c.headCount) heads of even size in \(file.path)")
        }
        guard c.eps > 0, c.eps.isFinite else {
            throw LeapError.modelLoading("layer norm epsilon \(c.eps) is not a positive number in \(file.path)")
        }
        // Sizes the metadata does not carry, from the tensors (each one's full shape is checked when bound).
        c.ffnHidden = try b.info("a.blk.0.ffn_up.weight").ne4[1]
        c.convKernel = try b.info("a.blk.0.conv_dw.weight").ne4[0]
        c.subsamplingChannels = try b.info("a.conv1d.0.weight").ne4[3]
        c.adapterHidden = try b.info("mm.a.mlp.1.weight").ne4[1]
        guard c.convKernel % 2 == 1 else {
            throw LeapError.modelLoading("depthwise convolution kernel \(c.convKernel) is not odd in \(file.path)")
        }
        guard c.melBins >= 8 else {
            throw LeapError.modelLoading("clip.audio.num_mel_bins = \(c.melBins) is too small for 8x subsampling in \(file.path)")
        }
        return c
    }
}
