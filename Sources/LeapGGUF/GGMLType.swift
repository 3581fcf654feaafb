import CLeapKernels

/// ggml tensor element types, with their ggml ids (the values stored in GGUF tensor infos).
package enum GGMLType: UInt32, Sendable, CaseIterable {
    case f32 = 0
    case f16 = 1
    case q4_0 = 2
    case q4_1 = 3
    case q5_0 = 6
    case q5_1 = 7
    case q8_0 = 8
    case q8_1 = 9
    case q2_K = 10
    case q3_K = 11
    case q4_K = 12
    case q5_K = 13
    case q6_K = 14
    case q8_K = 15
    case bf16 = 30

    /// Elements per block (1 for plain float types). The type facts are the kernels' (types.c).
    package var blockSize: Int { Int(lk_block_size(Int32(rawValue))) }

    /// Bytes per block (ggml's block_* structs, lk_types.h).
    package var blockBytes: Int { lk_block_bytes(Int32(rawValue)) }

    package var name: String {
        switch self {
        case .f32: return "F32"
        case .f16: return "F16"
        case .bf16: return "BF16"
        case .q4_0: return "Q4_0"
        case .q4_1: return "Q4_1"
        case .q5_0: return "Q5_0"
        case .q5_1: return "Q5_1"
        case .q8_0: return "Q8_0"
        case .q8_1: return "Q8_1"
        case .q2_K: return "Q2_K"
        case .q3_K: return "Q3_K"
        case .q4_K: return "Q4_K"
        case .q5_K: return "Q5_K"
        case .q6_K: return "Q6_K"
        case .q8_K: return "Q8_K"
        }
    }

    /// Bytes of one row of `n` elements, or nil when `n` is not a multiple of the block size or overflows.
    package func rowBytes(_ n: Int) -> Int? {
        guard n >= 0, n % blockSize == 0 else { return nil }
        let (r, o) = (n / blockSize).multipliedReportingOverflow(by: blockBytes)
        return o ? nil : r
    }
}

extension GGMLType {
    /// The ggml name of any type id, including types libleap does not support ("IQ4_NL"), or "unknown".
    package static func name(forID id: UInt32) -> String {
        if let t = GGMLType(rawValue: id) { return t.name }
        switch id {
        case 4: return "Q4_2 (removed)"
        case 5: return "Q4_3 (removed)"
        case 16: return "IQ2_XXS"
        case 17: return "IQ2_XS"
        case 18: return "IQ3_XXS"
        case 19: return "IQ1_S"
        case 20: return "IQ4_NL"
        case 21: return "IQ3_S"
        case 22: return "IQ2_S"
        case 23: return "IQ4_XS"
        case 24: return "I8"
        case 25: return "I16"
        case 26: return "I32"
        case 27: return "I64"
        case 28: return "F64"
        case 29: return "IQ1_M"
        case 34: return "TQ1_0"
        case 35: return "TQ2_0"
        case 39: return "MXFP4"
        case 40: return "NVFP4"
        case 41: return "Q1_0"
        default: return "unknown"
        }
    }
}
