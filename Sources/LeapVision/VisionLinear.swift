// VisionLinear: the encoder's linear layers. F32 and F16 weights go through lk_vision_gemm, a register-
// blocked product for batches of hundreds of patches (the shared float kernels keep llama.cpp's one-token
// summation order, which costs them 2-3x here); F16 weights multiply activations rounded to F16, as ggml
// and Linear do. Other types (Q8_0, ...) use Linear (Kernels.matmul).
import CLeapKernels
import LeapCore
import LeapKernels

struct VisionLinear {
    let linear: Linear
    var inputs: Int { linear.inputs }
    var outputs: Int { linear.outputs }
    var bias: [Float]? { linear.bias }

    init(_ linear: Linear) { self.linear = linear }

    init(_ b: TensorBinder, _ name: String, inputs: Int, outputs: Int) throws {
        linear = try Linear(b, name, inputs: inputs, outputs: outputs)
    }

    func callAsFunction(
        _ x: UnsafePointer<Float>,          // [rows, inputs]
        rows: Int,
        into y: UnsafeMutablePointer<Float>, // [rows, outputs]
        ggmlOrder: Bool = false,             // Linear's kernels whatever the type
        pool: ThreadPool
    ) {
        let w = linear.weight
        guard rows > 0, !ggmlOrder, w.type == .f32 || w.type == .f16 else {
            linear(x, rows: rows, into: y, pool: pool)
            return
        }
        var input = x
        if w.type == .f16 {
            let rounded = pool.scratch(bytes: rows * inputs * 4).assumingMemoryBound(to: Float.self)
            Kernels.roundToF16(x, into: rounded, n: rows * inputs, pool: pool)
            input = UnsafePointer(rounded)
        }
        guard Kernels.visionGemm(w, x: input, xStride: inputs, tokens: rows, y: y, yStride: outputs, pool: pool) else {
            linear(x, rows: rows, into: y, pool: pool)
            return
        }
        linear.bias?.withUnsafeBufferPointer { bp in
            guard let b = bp.baseAddress else { return }
            for t in 0..<rows { Kernels.add(y + t * outputs, b, y: y + t * outputs, n: outputs) }
        }
    }
}

extension Kernels {
    /// y[i] = x[i] rounded to the nearest F16 value (kept as float), split over the pool.
    static func roundToF16(_ x: UnsafePointer<Float>, into y: UnsafeMutablePointer<Float>, n: Int, pool: ThreadPool) {
        pool.parallelFor(n, align: 256, chunksPerThread: 1) { r in
            var half = [UInt16](repeating: 0, count: 256)
            half.withUnsafeMutableBufferPointer { h in
                var i = r.lowerBound
                while i < r.upperBound {
                    let m = min(256, r.upperBound - i)
                    lk_f32_to_f16_row(x + i, h.baseAddress, Int64(m))
                    lk_f16_to_f32_row(h.baseAddress, y + i, Int64(m))
                    i += m
                }
            }
        }
    }

    /// Y[t, r] = Σ_c W[r, c] · X[t, c] with lk_vision_gemm (W in F32 or F16), rows split over the pool in
    /// panels of 32. False (nothing reliable written) if the kernel could not run.
    static func visionGemm(
        _ w: WeightMatrix, x: UnsafePointer<Float>, xStride: Int, tokens: Int,
        y: UnsafeMutablePointer<Float>, yStride: Int, pool: ThreadPool
    ) -> Bool {
        let failed = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
        defer { failed.deallocate() }
        failed.pointee = 0
        let type = Int32(w.type.rawValue)
        pool.parallelFor(w.rows, align: 32, chunksPerThread: 2) { r in
            if lk_vision_gemm(type, w.data, w.rowBytes, Int64(w.cols), x, Int64(xStride), Int64(tokens), y,
                              Int64(yStride), Int64(r.lowerBound), Int64(r.upperBound)) == 0 {
                failed.pointee = 1
            }
        }
        return failed.pointee == 0
    }
}
