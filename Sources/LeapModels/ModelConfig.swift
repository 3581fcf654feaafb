// ModelConfig: the hyper-parameters of a decoder-only model, read from GGUF metadata (`<arch>.*` keys).
import LeapCore
import LeapGGUF

package enum Architecture: String, Sendable, CaseIterable {
    case lfm2
    case llama
    case gemma3
    case qwen2
    case qwen3
    case lfm2moe
}

/// What a layer mixes tokens with.
package enum LayerKind: Sendable, Equatable {
    case attention
    case shortConv
}

package enum FFNActivation: Sendable {
    case silu      // llama, LFM2: down(silu(gate) ⊙ up)
    case geluTanh  // Gemma: down(gelu_tanh(gate) ⊙ up)
}

package struct ModelConfig: Sendable {
    package var architecture: Architecture
    package var name: String
    package var nLayer: Int
    package var nEmbd: Int
    package var nVocab: Int
    package var nCtxTrain: Int
    package var nFF: [Int]               // per layer
    package var nHead: Int
    package var nHeadKV: [Int]           // per layer; 0 for LFM2 short-conv layers
    package var headDim: Int
    package var layerKinds: [LayerKind]
    package var rmsEps: Float
    package var ropeBase: Float
    package var ropeFreqScale: Float
    package var ropeBaseSWA: Float       // Gemma 3 local layers
    package var nRot: Int
    package var ropeNeox: Bool           // NEOX pairs (i, i+n/2) vs NORM adjacent pairs (llama GGUFs)
    package var slidingWindow: Int       // 0 = none
    package var isSlidingLayer: [Bool]
    package var embedScale: Float?       // Gemma: sqrt(n_embd)
    package var queryScale: Float        // multiplies q·k (or q before the product, see queryPreScaled)
    package var queryPreScaled: Bool     // Gemma: q *= scale before the F16 rounding (llama.cpp order)
    package var activation: FFNActivation
    package var convLCache: Int          // LFM2 short-conv kernel length (3)
    package var finalLogitSoftcap: Float?
    package var chatTemplate: String?
    package var ropeYaRN: RopeYaRN? = nil  // YaRN context extension (rope.scaling.type "yarn"), see RopeScaling.swift
    /// Rows of a dense output head that replaces the language-model head (LFM2 `dense_2`, e.g. the LFM2.5-Audio
    /// detokenizer's 1282 spectrum values); nil = logits over the vocabulary.
    package var denseOutputWidth: Int? = nil

    /// Floats per position the output head writes (what `InferenceContext.logits(at:)` returns).
    package var outputWidth: Int { denseOutputWidth ?? nVocab }

    package var nAttentionLayers: Int { layerKinds.filter { $0 == .attention }.count }
    package var maxHeadKV: Int { nHeadKV.max() ?? 0 }
}

/// Typed access to `<arch>.<key>` with errors that name the key.
struct ArchKeys {
    let file: GGUFFile
    let prefix: String

    func required(_ key: String) throws -> Int {
        guard let v = try file.metadata.optionalInt(prefix + key) else {
            throw LeapError.modelLoading("missing GGUF key '\(prefix + key)' in \(file.path)")
        }
        return v
    }
    func optional(_ key: String) throws -> Int? { try file.metadata.optionalInt(prefix + key) }
    func float(_ key: String) throws -> Float? { try file.metadata.optionalFloat(prefix + key) }
    func requiredFloat(_ key: String) throws -> Float {
        guard let v = try float(key) else {
            throw LeapError.modelLoading("missing GGUF key '\(prefix + key)' in \(file.path)")
        }
        return v
    }

    /// A per-layer array (INT32/UINT32 array of length n) or a scalar broadcast to every layer.
    func perLayer(_ key: String, _ n: Int) throws -> [Int]? {
        let full = prefix + key
        guard let value = file.metadata[full] else { return nil }
        if case .array = value {
            let xs = try file.metadata.int32Array(full)
            guard xs.count == n else {
                throw LeapError.modelLoading("GGUF key '\(full)' has \(xs.count) elements, expected \(n) (block_count)")
            }
            return xs.map { Int($0) }
        }
        return [Int](repeating: try file.metadata.int(full), count: n)
    }

    func positive(_ key: String, _ v: Int, max limit: Int = 1 << 24) throws -> Int {
        guard v > 0, v <= limit else {
            throw LeapError.modelLoading("GGUF key '\(prefix + key)' = \(v) is out of range 1...\(limit)")
        }
        return v
    }
}
