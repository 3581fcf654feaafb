// Layers: the building blocks the encoders (vision, audio) and the audio decoder share on top of the
// kernels: a linear layer with bias, LayerNorm and the activations, over row batches on a thread pool.
import CLeapKernels
import LeapCore
import LeapGGUF

/// y = W·x + b for each row of a batch; W stays in its GGUF type (in the mmap).
package struct Linear: @unchecked Sendable {
    package let weight: WeightMatrix   // [outputs, inputs]
    package let bias: [Float]?         // [outputs]
    package var inputs: Int { weight.cols }
    package var outputs: Int { weight.rows }

    package init(weight: WeightMatrix, bias: [Float]?) throws {
        if let bias, bias.count != weight.rows {
            throw LeapError.modelLoading("bias of \(bias.count) values for a weight of \(weight.rows) rows")
        }
        self.weight = weight
        self.bias = bias
    }

    /// `<name>.weight` ([inputs, outputs] in ggml order) and `<name>.bias` when `bias` (or when present, for
    /// `.ifPresent`).
    package init(_ b: TensorBinder, _ name: String, inputs: Int, outputs: Int, bias: BiasUse = .required) throws {
        let w = try b.matrix(name + ".weight", rows: outputs, cols: inputs)
        let bv: [Float]?
        switch bias {
        case .required: bv = try b.vector(name + ".bias", outputs)
        case .ifPresent: bv = try b.optionalVector(name + ".bias", outputs)
        case .none: bv = nil
        }
        try self.init(weight: w, bias: bv)
    }

    package enum BiasUse { case required, ifPresent, none }

    /// Y[t] = W·X[t] + b for t < rows. F16 / BF16 weights multiply activations rounded to F16 / BF16 (ggml's
    /// vec_dot types), the others their usual 8-bit blocks (Kernels.matmul).
    package func callAsFunction(
        _ x: UnsafePointer<Float>,          // [rows, inputs]
        rows: Int,
        into y: UnsafeMutablePointer<Float>, // [rows, yStride] (first `outputs` of each row written)
        yStride: Int? = nil,
        pool: ThreadPool
    ) {
        guard rows > 0 else { return }
        let ys = yStride ?? outputs
        if weight.type == .f16 {
            let n = inputs
            let rounded = pool.scratch(bytes: rows * n * 4).assumingMemoryBound(to: Float.self)
            let half = UnsafeMutablePointer<UInt16>.allocate(capacity: rows * n)
            defer { half.deallocate() }
            lk_f32_to_f16_row(x, half, Int64(rows * n))
            lk_f16_to_f32_row(half, rounded, Int64(rows * n))
            Kernels.matmulQuantized(weight, xq: UnsafeRawPointer(rounded), y: y, nTokens: rows, yRowStride: ys, pool: pool)
        } else if weight.type == .bf16 {
            let rounded = pool.scratch(bytes: rows * inputs * 4).assumingMemoryBound(to: Float.self)
            lk_round_bf16_row(x, rounded, Int64(rows * inputs))
            Kernels.matmulQuantized(weight, xq: UnsafeRawPointer(rounded), y: y, nTokens: rows, yRowStride: ys, pool: pool)
        } else {
            Kernels.matmul(weight, x: x, y: y, nTokens: rows, yRowStride: ys, pool: pool)
        }
        if let bias {
            bias.withUnsafeBufferPointer { bp in
                for t in 0..<rows { lk_add(y + t * ys, bp.baseAddress, y + t * ys, Int64(outputs)) }
            }
        }
    }
}

/// LayerNorm with weight and optional bias (ggml's arithmetic: lk_layer_norm).
package struct LayerNorm: Sendable {
    package let weight: [Float]   // [n]
    package let bias: [Float]?    // [n]
    package let eps: Float
    package var width: Int { weight.count }

    package init(weight: [Float], bias: [Float]?, eps: Float) {
        self.weight = weight
        self.bias = bias
        self.eps = eps
    }

    /// `<name>.weight` and `<name>.bias` of `n` values.
    package init(_ b: TensorBinder, _ name: String, _ n: Int, eps: Float, bias: Bool = true) throws {
        weight = try b.vector(name + ".weight", n)
        self.bias = bias ? try b.vector(name + ".bias", n) : nil
        self.eps = eps
    }

    /// Normalizes `rows` rows of `width` floats (y may alias x); rows are split over `pool` when given.
    package func callAsFunction(_ x: UnsafePointer<Float>, rows: Int, into y: UnsafeMutablePointer<Float>, pool: ThreadPool? = nil) {
        let n = width
        weight.withUnsafeBufferPointer { w in
            let run: (Range<Int>) -> Void = { r in
                for t in r {
                    if let bias = self.bias {
                        bias.withUnsafeBufferPointer { b in lk_layer_norm(x + t * n, w.baseAddress, b.baseAddress, y + t * n, Int64(n), self.eps) }
                    } else {
                        lk_layer_norm(x + t * n, w.baseAddress, nil, y + t * n, Int64(n), self.eps)
                    }
                }
            }
            if let pool, rows >= 8 { pool.parallelFor(rows, chunksPerThread: 1, run) } else { run(0..<rows) }
        }
    }
}
