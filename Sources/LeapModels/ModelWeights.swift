// ModelWeights: the tensors of a model, bound by name from the GGUF. Matrices stay in the mmap (no copy)
// unless `pack` replaces them with copies in a layout the kernels read faster; the small 1-D vectors (norms,
// conv taps) are copied to float arrays.
import CLeapKernels
import LeapCore
import LeapGGUF
import LeapKernels

/// Mixer of one layer: attention (GQA) or LFM2's gated short convolution.
package enum MixerWeights: @unchecked Sendable {
    case attention(AttentionWeights)
    case shortConv(ShortConvWeights)
}

package struct AttentionWeights: @unchecked Sendable {
    var q: WeightMatrix       // [nHead*hd, E]
    var k: WeightMatrix       // [nHeadKV*hd, E]
    var v: WeightMatrix       // [nHeadKV*hd, E]
    var output: WeightMatrix  // [E, nHead*hd]
    var qNorm: [Float]?       // [hd] per-head RMSNorm (LFM2, Gemma 3)
    var kNorm: [Float]?
    var qBias: [Float]? = nil // [nHead*hd] (Qwen2; optional in llama files as in llama.cpp)
    var kBias: [Float]? = nil // [nHeadKV*hd]
    var vBias: [Float]? = nil // [nHeadKV*hd]
    var nHeadKV: Int
    var kvSlot: Int           // index of this layer in the KV cache
}

package struct ShortConvWeights: @unchecked Sendable {
    var inProj: WeightMatrix  // [3E, E] → B, C, x chunks
    var outProj: WeightMatrix // [E, E]
    var conv: [Float]         // [E, L] taps per channel, tap L-1 = current token
    var convSlot: Int         // index of this layer in the conv state
}

package struct LayerWeights: @unchecked Sendable {
    var attnNorm: [Float]              // [E]
    var mixer: MixerWeights
    var postAttnNorm: [Float]?         // Gemma 3
    var ffnNorm: [Float]               // [E]
    var ffn: FFNWeights
    var postFFNNorm: [Float]?          // Gemma 3
}

/// Feed-forward of one layer: one gated MLP, or a routed mixture of experts (LFM2-MoE, see MoE.swift).
package enum FFNWeights: @unchecked Sendable {
    case dense(DenseFFNWeights)
    case moe(MoEWeights)
}

package struct DenseFFNWeights: @unchecked Sendable {
    var gate: WeightMatrix             // [F, E]
    var up: WeightMatrix               // [F, E]
    var down: WeightMatrix             // [E, F]
}

package struct ModelWeights: @unchecked Sendable {
    var tokenEmbedding: WeightMatrix   // [V, E]
    var outputNorm: [Float]            // [E]
    var output: WeightMatrix           // [V, E] (the embedding when tied; [outputWidth, E] for a dense head)
    var outputBias: [Float]? = nil     // [outputWidth] (LFM2 `dense_2.bias`)
    var layers: [LayerWeights]
    var ropeFreqFactors: [Float]? = nil  // [nRot/2] Llama 3 `rope_freqs.weight`: rotary frequency i is divided by [i]
}

extension ModelWeights {
    /// Replaces the matrices the kernels read faster in another layout with packed copies held by `store`
    /// (`PackedMatrices`), and gives the file's pages of the originals back. A separate token embedding stays
    /// in the mmap (only its looked-up rows are read); a tied one is the packed output, its rows read back
    /// out of the 8-row layout (`lk_rows8_row`). Experts stay too (MUL_MAT_ID). `pool`'s threads share the
    /// copying.
    mutating func pack(into store: PackedMatrices, releasing file: GGUFFile, pool: ThreadPool?) {
        let packed = { (w: WeightMatrix) -> WeightMatrix in
            let p = store.packed(w, pool: pool)
            if p.rows8 { file.releasePages(w.data, count: w.byteCount) }
            return p
        }
        let tied = output.data == tokenEmbedding.data
        output = packed(output)
        if tied { tokenEmbedding = output }
        for i in layers.indices {
            switch layers[i].mixer {
            case .attention(var a):
                a.q = packed(a.q)
                a.k = packed(a.k)
                a.v = packed(a.v)
                a.output = packed(a.output)
                layers[i].mixer = .attention(a)
            case .shortConv(var c):
                c.inProj = packed(c.inProj)
                c.outProj = packed(c.outProj)
                layers[i].mixer = .shortConv(c)
            }
            if case .dense(var f) = layers[i].ffn {
                f.gate = packed(f.gate)
                f.up = packed(f.up)
                f.down = packed(f.down)
                layers[i].ffn = .dense(f)
            }
        }
    }
}

