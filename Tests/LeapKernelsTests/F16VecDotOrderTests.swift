// One-token attention's F16 products (lk_matvec_f16_ggml) sum in the order of ggml_vec_dot_f16 in llama.cpp's
// AVX-512 build, on the AVX2 and AVX-512 paths: equal bit for bit to a scalar emulation of that order written
// from simd-mappings.h (4 accumulators x 16 lanes over 64-element steps, acc0+acc2, acc1+acc3, their sum,
// _mm512_reduce_add_ps's halving tree, leftovers added in double). scripts/kernels/f16_dot_vs_ggml.py checks
// the same kernel against llama.cpp's own function. Rows padded with zeros (n_padded > cols) must give the
// padded row's sum without reading past cols (NaN there here). Paths without that order use lk_matmul's.
import CLeapKernels
import LeapKernels
import Testing

/// ggml_vec_dot_f16 of an AVX-512 build over w[0..<n] · x[0..<n] (floats holding f16 values).
private func ggmlVecDotF16AVX512(_ w: [Float], _ x: [Float]) -> Float {
    let n = w.count, np = n / 64 * 64
    var acc = [[Float]](repeating: [Float](repeating: 0, count: 16), count: 4)
    for i in 0..<np { acc[(i / 16) % 4][i % 16] += w[i] * x[i] }  // products of f16 values are exact
    var v = (0..<16).map { (acc[0][$0] + acc[2][$0]) + (acc[1][$0] + acc[3][$0]) }
    for half in [8, 4, 2, 1] { v = (0..<half).map { v[$0] + v[$0 + half] } }
    var sum = Double(v[0])
    for i in np..<n { sum += Double(w[i] * x[i]) }
    return Float(sum)
}

@Test(arguments: [1, 15, 16, 63, 64, 65, 100, 256, 300, 512, 513, 1000])
func oneTokenF16ProductsSumLikeGGMLVecDot(cols: Int) throws {
    var rng = Rng(9100 + UInt64(cols))
    let rows = 5
    for nPadded in Set([cols, (cols + 15) / 16 * 16, (cols + 255) / 256 * 256]).sorted() {
        let stride = nPadded + 3
        var w = [UInt16](repeating: 0x7E00, count: rows * stride)  // NaN beyond cols: must not be read
        for r in 0..<rows { for c in 0..<cols { w[r * stride + c] = lk_f32_to_f16(rng.normal() * Float(1 + r)) } }
        let x = (0..<cols).map { _ in lk_f16_to_f32(lk_f32_to_f16(rng.normal())) }
        let want = (0..<rows).map { r in
            ggmlVecDotF16AVX512((0..<nPadded).map { $0 < cols ? lk_f16_to_f32(w[r * stride + $0]) : 0 },
                                (0..<nPadded).map { $0 < cols ? x[$0] : 0 })
        }
        for isa in [KernelISA.avx2, .avx512, .avx512NoVNNI, .llamaOrder] where isa.isAvailable {
            var y = [Float](repeating: .nan, count: rows)
            _ = isa.withThreadSelection { lk_matvec_f16_ggml(w, stride * 2, Int64(cols), Int64(nPadded), x, &y, 0, Int64(rows)) }
            #expect(y.map(\.bitPattern) == want.map(\.bitPattern), "cols=\(cols) n_padded=\(nPadded) [\(isa.name)]: \(y) vs \(want)")
        }
        // The scalar path keeps lk_matmul's order (batched attention's): its decode equals its prefill.
        var y = [Float](repeating: .nan, count: rows), ref = y
        _ = KernelISA.scalar.withThreadSelection {
            lk_matvec_f16_ggml(w, stride * 2, Int64(cols), Int64(nPadded), x, &y, 0, Int64(rows))
            lk_matmul(Int32(LK_TYPE_F16), w, stride * 2, Int64(cols), x, 0, 1, &ref, 0, 0, Int64(rows))
        }
        #expect(y.map(\.bitPattern) == ref.map(\.bitPattern))
    }
}

/// Several vectors against the same rows (the heads of one KV head): each (row, vector) gets the one-vector
/// kernel's bits, whatever the row blocks the rows are read in (rows of 64 and of 4096 columns; a row range
/// that starts inside the matrix; outputs at a stride, other lanes untouched).
@Test(arguments: [64, 4096])
func f16ProductsOfSeveralVectorsEqualOneAtATime(cols: Int) throws {
    var rng = Rng(9200 + UInt64(cols))
    let rows = 300, nx = 4, stride = cols + 8, xStride = cols + 5, yStride = rows + 7
    let nPadded = (cols + 255) / 256 * 256
    let w = (0..<(rows * stride)).map { _ in lk_f32_to_f16(rng.normal()) }
    let x = (0..<(nx * xStride)).map { _ in lk_f16_to_f32(lk_f32_to_f16(rng.normal())) }
    for isa in [KernelISA.scalar, .avx2, .avx512, .llamaOrder] where isa.isAvailable {
        var want = [Float](repeating: -1, count: nx * yStride), y = want
        _ = isa.withThreadSelection {
            for i in 0..<nx {
                x.withUnsafeBufferPointer { xp in
                    want.withUnsafeMutableBufferPointer { yp in
                        lk_matvec_f16_ggml(w, stride * 2, Int64(cols), Int64(nPadded), xp.baseAddress! + i * xStride,
                                           yp.baseAddress! + i * yStride, 3, Int64(rows))
                    }
                }
            }
            lk_matvec_f16_ggml_multi(w, stride * 2, Int64(cols), Int64(nPadded), x, Int64(xStride), Int64(nx), &y,
                                     Int64(yStride), 3, Int64(rows))
        }
        #expect(y.map(\.bitPattern) == want.map(\.bitPattern), "cols=\(cols) [\(isa.name)]")
        #expect(y[0..<3].allSatisfy { $0 == -1 } && y[rows..<yStride].allSatisfy { $0 == -1 })
    }
}
