// ModelWeights: the tensors of a model, bound by name from the GGUF. Matrices stay in the mmap (no copy);
// only the small 1-D vectors (norms, conv taps) are copied to float arrays.
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
    var output: WeightMatrix           // [V, E] (the embedding when tied)
    var layers: [LayerWeights]
    var ropeFreqFactors: [Float]? = nil  // [nRot/2] Llama 3 `rope_freqs.weight`: rotary frequency i is divided by [i]
}

/// Binds tensors by name with shape checks; every error names the tensor and the file.
struct TensorBinder {
    let file: GGUFFile

    func has(_ name: String) -> Bool { file.tensor(named: name) != nil }

    func info(_ name: String) throws -> GGUFTensorInfo {
        guard let t = file.tensor(named: name) else {
            throw LeapError.modelLoading("missing tensor '\(name)' in \(file.path)")
        }
        return t
    }

    /// A 2-D weight with ne = [cols, rows].
    func matrix(_ name: String, rows: Int, cols: Int) throws -> WeightMatrix {
        let t = try info(name)
        let ne = t.ne
        guard (ne.count == 2 && ne[0] == cols && ne[1] == rows) || (ne.count > 2 && ne[0] == cols && ne[1] == rows && ne[2...].allSatisfy { $0 == 1 }) else {
            throw LeapError.modelLoading("tensor '\(name)' has shape \(ne), expected [\(cols), \(rows)] in \(file.path)")
        }
        let data = file.tensorData(t)
        guard let base = data.baseAddress, data.count == t.byteCount else {
            throw LeapError.modelLoading("tensor '\(name)' data is outside \(file.path)")
        }
        do {
            return try WeightMatrix(type: t.type, rows: rows, cols: cols, data: base)
        } catch let e as LeapError {
            throw LeapError(e.kind == .unsupported ? .unsupported : .modelLoading, "tensor '\(name)': \(e.message)")
        }
    }

    /// A 1-D float vector of `n` elements (any type; dequantized copy).
    func vector(_ name: String, _ n: Int) throws -> [Float] {
        let t = try info(name)
        guard t.elementCount == n, t.ne.first == n || t.ne.count > 1 else {
            throw LeapError.modelLoading("tensor '\(name)' has shape \(t.ne), expected [\(n)] in \(file.path)")
        }
        return try file.dequantize(t)
    }

    /// A small 2-D float tensor (e.g. conv taps ne = [L, E]) dequantized, row-major [E][L].
    func small(_ name: String, ne0: Int, ne1: Int) throws -> [Float] {
        let t = try info(name)
        guard t.elementCount == ne0 * ne1, t.ne.count >= 2, t.ne[0] == ne0, t.ne[1] == ne1 else {
            throw LeapError.modelLoading("tensor '\(name)' has shape \(t.ne), expected [\(ne0), \(ne1)] in \(file.path)")
        }
        return try file.dequantize(t)
    }

    func optionalVector(_ name: String, _ n: Int) throws -> [Float]? {
        has(name) ? try vector(name, n) : nil
    }
}
