// VisionNumerics: the arithmetic choices where transformers and llama.cpp differ. transformers computes the
// SigLIP2 MLP's GELU with tanh (gelu_pytorch_tanh) and the LFM2-VL projector's exactly (erf), all in float32;
// llama.cpp uses ggml's GELU for both (the tanh form looked up in a table by the input's F16 bits) and embeds
// the patches with ggml_conv_2d, whose im2col rounds the pixels to F16 and whose product then rounds the
// kernel to F16 as well. Every float product sums in lk_vg_gemm_packed's order (not ggml's): the
// encoder's outputs differ from mtmd's by float rounding, not bit for bit.
import CLeapKernels
import CLeapMediaKernels
import LeapKernels

/// One form of GELU.
package enum GELUForm: Sendable, Equatable {
    /// 0.5x(1 + erf(x/√2)).
    case erf
    /// 0.5x(1 + tanh(√(2/π)(x + 0.044715x³))).
    case tanh
    /// ggml's CPU GELU: the tanh form at the F16 value of x, rounded to F16 (exact beyond ±10).
    case ggmlTable
}

/// The arithmetic of one encoder.
package struct VisionNumerics: Sendable, Equatable {
    package var mlpGELU: GELUForm
    package var projectorGELU: GELUForm
    /// Patch embedding with pixels and kernel rounded to F16 (llama.cpp), or in the file's type (transformers).
    package var patchEmbeddingInF16: Bool

    package init(mlpGELU: GELUForm, projectorGELU: GELUForm, patchEmbeddingInF16: Bool) {
        self.mlpGELU = mlpGELU
        self.projectorGELU = projectorGELU
        self.patchEmbeddingInF16 = patchEmbeddingInF16
    }

    /// llama.cpp mtmd's arithmetic (the default: generation then matches llama.cpp's).
    package static let llamaCpp = VisionNumerics(mlpGELU: .ggmlTable, projectorGELU: .ggmlTable, patchEmbeddingInF16: true)
    /// transformers' Lfm2VlModel.
    package static let transformers = VisionNumerics(mlpGELU: .tanh, projectorGELU: .erf, patchEmbeddingInF16: false)
}

/// Applies a GELU form in place over rows split on a thread pool.
struct GELU: Sendable {
    private let table: [Float] // [65536] ggml's GELU table

    init() {
        table = [Float](unsafeUninitializedCapacity: 65536) { buf, n in
            lk_gelu_f16_table_fill(buf.baseAddress)
            n = 65536
        }
    }

    func callAsFunction(_ form: GELUForm, _ x: UnsafeMutablePointer<Float>, rows: Int, width: Int, pool: ThreadPool) {
        table.withUnsafeBufferPointer { table in
            pool.parallelFor(rows, chunksPerThread: 2) { r in
                let p = x + r.lowerBound * width, n = r.count * width
                switch form {
                case .erf: lk_gelu_erf(p, p, Int64(n))
                case .tanh: lk_gelu_tanh(p, p, Int64(n))
                case .ggmlTable: lk_gelu_f16_table(table.baseAddress, p, p, Int64(n))
                }
            }
        }
    }
}
