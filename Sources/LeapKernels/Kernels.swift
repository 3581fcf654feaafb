// Kernels: matrix products over a thread pool, rows of weight matrices as floats and embedding lookup.
//
// The kernel API is the C header of CLeapKernels (include/leap_kernels.h): code that needs an element-wise op,
// a norm, RoPE, softmax, a conversion or a single product calls its lk_* function directly. This module keeps
// only what C cannot express: WeightMatrix (a typed view of a tensor in the mmap), ThreadPool and the
// pool-parallel matmul below, the encoder layers (Layers.swift, BatchedLinear.swift), the packed matrices and
// the tensor binder. It wraps no lk_* function one for one.
import CLeapKernels
import LeapCore
import LeapGGUF

/// Entry points of the numeric core. Buffers are raw pointers with their shapes in the comments; callers
/// own them. Calls sharing a `ThreadPool` must not overlap (they share its scratch buffer).
package enum Kernels {
    /// Bytes of one activation row of `cols` elements converted for `w` (what `quantizeActivations` writes).
    package static func activationRowBytes(_ w: WeightMatrix) -> Int {
        Int(lk_row_bytes(lk_activation_type(Int32(w.type.rawValue)), Int64(w.cols)))
    }

    /// Converts `nTokens` float rows to `w`'s activation format (ggml vec_dot_type: Q8_0 / Q8_1 / Q8_K blocks,
    /// or a copy for float weights). Lets a caller quantize once and multiply with several weights of the same
    /// type and width (e.g. q, k, v).
    package static func quantizeActivations(
        _ w: WeightMatrix,
        x: UnsafePointer<Float>, // [nTokens, w.cols]
        nTokens: Int,
        into dst: UnsafeMutableRawPointer, // [nTokens, activationRowBytes(w)]
        pool: ThreadPool?
    ) {
        let act = lk_activation_type(Int32(w.type.rawValue))
        let rowBytes = activationRowBytes(w)
        let cols = w.cols
        let body: (Range<Int>) -> Void = { range in
            for t in range { lk_quantize_row(act, x + t * cols, dst + t * rowBytes, Int64(cols)) }
        }
        if let pool, nTokens >= 4 { pool.parallelFor(nTokens, chunksPerThread: 1, body) } else { body(0..<nTokens) }
    }

    /// y = W · x for one token (decode).
    package static func matvec(
        _ w: WeightMatrix,
        x: UnsafePointer<Float>, // [w.cols]
        y: UnsafeMutablePointer<Float>, // [w.rows]
        pool: ThreadPool
    ) {
        matmul(w, x: x, y: y, nTokens: 1, pool: pool)
    }

    /// Y = X · Wᵀ for a batch of tokens (prefill): `Y[t, r] = Σ_c W[r, c] · X[t, c]`.
    /// Activations are quantized once per call into the pool's scratch buffer. Summed in llama.cpp's order
    /// for `w` and this batch size (`lk_matmul_tensor`): for Q4_K and Q6_K weights a token's result can
    /// differ in the last bits from the same token multiplied alone.
    package static func matmul(
        _ w: WeightMatrix,
        x: UnsafePointer<Float>, // [nTokens, w.cols]
        y: UnsafeMutablePointer<Float>, // [nTokens, yRowStride] (first w.rows of each row written)
        nTokens: Int,
        yRowStride: Int? = nil, // default w.rows
        pool: ThreadPool
    ) {
        if nTokens <= 0 { return }
        let rowBytes = activationRowBytes(w)
        let xq = pool.scratch(bytes: nTokens * rowBytes)
        quantizeActivations(w, x: x, nTokens: nTokens, into: xq, pool: pool)
        matmulQuantized(w, xq: UnsafeRawPointer(xq), y: y, nTokens: nTokens, yRowStride: yRowStride, pool: pool)
    }

    /// Like `matmul`, with activations already converted by `quantizeActivations`.
    package static func matmulQuantized(
        _ w: WeightMatrix,
        xq: UnsafeRawPointer, // [nTokens, activationRowBytes(w)]
        y: UnsafeMutablePointer<Float>, // [nTokens, yRowStride]
        nTokens: Int,
        yRowStride: Int? = nil,
        pool: ThreadPool
    ) {
        if nTokens <= 0 { return }
        let type = Int32(w.type.rawValue)
        let xRowBytes = activationRowBytes(w)
        let ys = Int64(yRowStride ?? w.rows)
        // Rows are split across threads; keep ranges multiples of 16 (the C row tile). One matvec range per
        // thread: each lk_matmul call prepares the activation once and streams its rows in four long runs.
        pool.parallelFor(w.rows, align: 16, chunksPerThread: nTokens == 1 ? 1 : 2) { range in
            lk_matmul_tensor(
                type, w.llamaLayout, w.data, w.rowBytes, Int64(w.cols), xq, xRowBytes, Int64(nTokens), y, ys,
                Int64(range.lowerBound), Int64(range.upperBound))
        }
    }

    /// dst = row `r` of `w` as floats.
    package static func dequantizeRow(_ w: WeightMatrix, row r: Int, into dst: UnsafeMutablePointer<Float>) throws {
        guard r >= 0, r < w.rows else {
            throw LeapError(.invalidArgument, "row \(r) is out of range 0..<\(w.rows)")
        }
        dequantizeRow(w, checkedRow: r, into: dst)
    }

    /// dst = row `r` (0 <= r < w.rows, the caller checked) of `w` as floats; a row of the 8-row layout is
    /// read back out of its group first.
    package static func dequantizeRow(_ w: WeightMatrix, checkedRow r: Int, into dst: UnsafeMutablePointer<Float>) {
        let type = Int32(w.type.rawValue)
        guard w.rows8 else { return lk_dequantize_row(type, w.row(r), dst, Int64(w.cols)) }
        withUnsafeTemporaryAllocation(byteCount: w.rowBytes, alignment: 64) { row in
            lk_rows8_row(type, w.data, w.rowBytes, Int64(w.cols), Int64(r), row.baseAddress)
            lk_dequantize_row(type, row.baseAddress, dst, Int64(w.cols))
        }
    }

    /// Embedding lookup: out[i] = row ids[i] of `w` as floats.
    package static func getRows(
        _ w: WeightMatrix,
        ids: UnsafeBufferPointer<Int32>, // [n]
        out: UnsafeMutablePointer<Float> // [n, w.cols]
    ) throws {
        for (i, id) in ids.enumerated() {
            guard id >= 0, Int(id) < w.rows else {
                throw LeapError(.invalidArgument, "token id \(id) at index \(i) is out of range 0..<\(w.rows)")
            }
            try dequantizeRow(w, row: Int(id), into: out + i * w.cols)
        }
    }
}
