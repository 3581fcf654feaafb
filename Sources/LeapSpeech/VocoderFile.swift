// VocoderFile: the tensors of an LFM2.5-Audio `vocoder-*.gguf` (Liquid's convert_vocoder_to_gguf.py layout).
//
// The file is recognised by its tensors: `general.architecture` holds a sentence, not an architecture. Keys
// (untyped, no prefix): `depthformer_n_layer`, `depthformer_n_embd`. Tensors, PyTorch names:
//   depthformer.layers.%d.{operator_norm, operator.qkv_proj, operator.attention.{q,k}_layernorm,
//                          operator.out_proj, ffn_norm, feed_forward.{w1,w2,w3}}.weight
//   depth_linear.{weight,bias}                       [B] -> [8 x D]
//   depth_embeddings.%d.{embedding_norm, embedding, to_logits}.weight   codebook %d: 2049 classes of [D]
//   audio_embedding.{embedding_norm, embedding, to_logits}.weight       8 x 2049 rows of [B]: frame feedback
//   emb.emb.weight                                   8 x 2048 rows of [detokenizer width]
//   istft.window                                     (unused: the ISTFT builds its own periodic Hann)
// B = the backbone's width, D = the depthformer's. Matrices stay in the mmap in their file type (F32, F16,
// BF16, Q8_0, Q4_0); 1-D tensors are copied as floats. `audio_embedding.embedding_norm` / `.to_logits` are
// training leftovers: their shapes are checked, they are never read.
import LeapCore
import LeapGGUF
import LeapKernels

/// Codes per frame and classes per codebook (2048 codes + end of audio).
package enum AudioCodes {
    package static let codebooks = 8
    package static let classes = 2049
    /// Code 2048 in codebook 0 ends the audio (the whole frame is then set to it).
    package static let endOfAudio: Int32 = 2048
    /// Codes per codebook in the detokenizer's table (no end-of-audio row).
    package static let detokenizerClasses = 2048
}

/// One codebook's input embedding (the previous code's contribution to the next codebook's input) and its
/// output head.
package struct CodebookHead: @unchecked Sendable {
    let embedding: WeightMatrix   // [2049, D]
    let norm: [Float]             // [D]
    let toLogits: WeightMatrix    // [2049, D]
}

package struct VocoderWeights: @unchecked Sendable {
    package let file: GGUFFile
    package let depthformer: DepthformerWeights
    /// Backbone hidden state -> the 8 codebook inputs.
    let depthLinear: Linear                // [8*D, B]
    let codebooks: [CodebookHead]          // [8]
    /// Σ_k rows[code_k + 2049 k]: the backbone input of a generated frame.
    let feedback: WeightMatrix             // [8*2049, B]
    /// mean_k rows[code_k + 2048 k]: the detokenizer input of a frame.
    let codeEmbedding: WeightMatrix        // [8*2048, detokenizer width]

    package var backboneWidth: Int { depthLinear.inputs }
    package var depthformerWidth: Int { depthformer.dim }
    package var detokenizerWidth: Int { codeEmbedding.cols }

    package init(path: String) throws {
        try self.init(file: GGUFFile(path: path))
    }

    package init(file: GGUFFile) throws {
        try Self.checkKind(file)
        self.file = file
        let b = TensorBinder(file: file)
        guard let nLayer = try file.optionalInt("depthformer_n_layer"), let dim = try file.optionalInt("depthformer_n_embd") else {
            throw LeapError.modelLoading("vocoder file \(file.path) lacks the key 'depthformer_n_layer' or 'depthformer_n_embd'")
        }
        depthformer = try DepthformerWeights(b, layers: nLayer, dim: dim)
        let C = AudioCodes.codebooks, K = AudioCodes.classes
        let dl = try b.info("depth_linear.weight")
        guard dl.ne.count == 2, dl.ne[1] == C * dim, dl.ne[0] > 0 else {
            throw LeapError.modelLoading("tensor 'depth_linear.weight' has shape \(dl.ne), expected [backbone width, \(C * dim)] in \(file.path)")
        }
        let B = dl.ne[0]
        depthLinear = try Linear(b, "depth_linear", inputs: B, outputs: C * dim)
        codebooks = try (0..<C).map { i in
            let p = "depth_embeddings.\(i)."
            return CodebookHead(embedding: try b.matrix(p + "embedding.weight", rows: K, cols: dim),
                                norm: try b.vector(p + "embedding_norm.weight", dim),
                                toLogits: try b.matrix(p + "to_logits.weight", rows: K, cols: dim))
        }
        feedback = try b.matrix("audio_embedding.embedding.weight", rows: C * K, cols: B)
        _ = try b.vector("audio_embedding.embedding_norm.weight", B)
        _ = try b.matrix("audio_embedding.to_logits.weight", rows: C * K, cols: B)
        let ce = try b.info("emb.emb.weight")
        guard ce.ne.count == 2, ce.ne[1] == C * AudioCodes.detokenizerClasses, ce.ne[0] > 0 else {
            throw LeapError.modelLoading("tensor 'emb.emb.weight' has shape \(ce.ne), expected [detokenizer width, \(C * AudioCodes.detokenizerClasses)] in \(file.path)")
        }
        codeEmbedding = try b.matrix("emb.emb.weight", rows: C * AudioCodes.detokenizerClasses, cols: ce.ne[0])
    }

    /// Refuses files that are not an LFM2.5-Audio vocoder, naming what they are when that is known.
    static func checkKind(_ file: GGUFFile) throws {
        let names = file.tensors.map(\.name)
        let hasDepthformer = file.tensor(named: "depth_linear.weight") != nil
            || names.contains { $0.hasPrefix("depthformer.") }
        let base = file.path.split(separator: "/").last.map(String.init) ?? file.path
        let mimiMarkers = ["mimi", "seanet", "quantizer", "decoder_transformer", "upsample"]
        let looksMimi = names.contains { n in mimiMarkers.contains { n.lowercased().contains($0) } }
        if base.hasPrefix("audiodecoder-") || (hasDepthformer && looksMimi && file.tensor(named: "emb.emb.weight") == nil) {
            throw LeapError.unsupported(
                "\(file.path) is an LFM2-Audio (v1) audio decoder (depthformer + Mimi codec): only LFM2.5-Audio vocoder-*.gguf files (with the LFM2 detokenizer) are supported")
        }
        guard hasDepthformer else {
            let arch = (try? file.optionalString("general.architecture")) ?? nil
            throw LeapError.modelLoading(
                "\(file.path) is not an LFM2.5-Audio vocoder file (no 'depth_linear.weight' / 'depthformer.*' tensors\(arch.map { "; general.architecture = '\($0)'" } ?? ""))")
        }
    }
}
