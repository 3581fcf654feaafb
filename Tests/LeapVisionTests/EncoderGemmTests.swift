// lk_vision_gemm (the encoder's F32 / F16 matrix product) against a float64 reference, on every path the CPU
// has, with row and token counts that leave partial panels (32 rows) and blocks (12 tokens); 545 rows make more
// panels than a stripe holds (at most 16), so the last stripe is partial.
import CLeapKernels
import CLeapMediaKernels
import Glibc
import LeapKernels
import Testing

@Suite struct EncoderGemmTests {
    @Test(arguments: [[1, 16, 1], [45, 48, 13], [64, 768, 24], [100, 40, 7], [545, 300, 13]])
    func gemmMatchesFloat64(_ shape: [Int]) throws {
        let (rows, cols, tokens) = (shape[0], shape[1], shape[2])
        var seed: UInt64 = 0x1234_5678
        func next() -> Float {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Float(Int64(bitPattern: seed >> 11) % 2001 - 1000) / 1000
        }
        let w = (0..<rows * cols).map { _ in next() }
        let x = (0..<tokens * cols).map { _ in next() }
        var wHalf = [UInt16](repeating: 0, count: w.count)
        lk_f32_to_f16_row(w, &wHalf, Int64(w.count))
        var wRounded = [Float](repeating: 0, count: w.count)
        lk_f16_to_f32_row(wHalf, &wRounded, Int64(w.count))
        for isa in KernelISA.allCases where isa.isAvailable {
            for (type, weights, effective) in [(LK_TYPE_F32, w.withUnsafeBytes { Array($0) }, w),
                                               (LK_TYPE_F16, wHalf.withUnsafeBytes { Array($0) }, wRounded)] {
                let rowBytes = type == LK_TYPE_F32 ? cols * 4 : cols * 2
                let ys = rows + 3  // a row stride wider than the rows: the padding must stay untouched
                var y = [Float](repeating: .nan, count: tokens * ys)
                let ok = isa.withThreadSelection {
                    lk_vision_gemm(Int32(type), weights, rowBytes, Int64(cols), x, Int64(cols), Int64(tokens), &y,
                                   Int64(ys), 0, Int64(rows))
                }
                #expect(ok == 1)
                var worst = 0.0
                for t in 0..<tokens {
                    for r in 0..<rows {
                        var want = 0.0
                        for c in 0..<cols { want += Double(effective[r * cols + c]) * Double(x[t * cols + c]) }
                        // float32 sums of `cols` products of values below 1: a few ulps of the sum's size
                        worst = max(worst, abs(Double(y[t * ys + r]) - want))
                    }
                    for r in rows..<ys { #expect(y[t * ys + r].isNaN) }
                }
                #expect(worst <= 1e-6 * Double(cols), "\(isa.name) type \(type) \(shape): \(worst)")
            }
        }
    }

    /// lk_vg_pack_x's layout on every path: value (token b·12 + t, column c) at block b's [c][12], rounded to the
    /// nearest F16 when asked (Swift's Float16 conversion, round to nearest even, as the oracle), zero past the
    /// tokens. Column counts with and without a remainder of the vector width; token counts with a partial
    /// block; a token stride wider than the columns.
    @Test(arguments: [[1, 8], [13, 20], [25, 768], [12, 7], [30, 64], [7, 3]])
    func packXMatchesLayout(_ shape: [Int]) {
        let (tokens, cols) = (shape[0], shape[1])
        let stride = cols + 5, block = Int(LK_VG_BLOCK_TOKENS), blocks = (tokens + block - 1) / block
        let x = (0..<tokens * stride).map { i in Float((i &* 2_654_435_761) % 20001) / 7.3 - 1370 }
        for roundF16 in [Int32(0), 1] {
            var want = [Float](repeating: 0, count: blocks * block * cols)
            for b in 0..<blocks {
                for c in 0..<cols {
                    for t in 0..<block where b * block + t < tokens {
                        let v = x[(b * block + t) * stride + c]
                        want[b * block * cols + c * block + t] = roundF16 == 1 ? Float(Float16(v)) : v
                    }
                }
            }
            for isa in KernelISA.allCases where isa.isAvailable {
                var got = [Float](repeating: .nan, count: Int(lk_vg_packed_x_floats(Int64(tokens), Int64(cols))))
                _ = isa.withThreadSelection {
                    lk_vg_pack_x(x, Int64(stride), Int64(tokens), Int64(cols), roundF16, &got, 0, Int64(blocks))
                }
                #expect(got == want, "\(isa.name) \(shape) round \(roundF16)")
            }
        }
    }

    /// Attention's softmax down columns (exponentials times the inverse sum) against a float64 softmax: its
    /// exponential is within about 1 ulp, the sum of 300 terms in float loses a few more; 1e-6 relative bounds
    /// both for probabilities <= 1. n = 101 covers a full pass of 96 columns and a partial one.
    @Test func expColumnsMatchesFloat64Softmax() {
        let rows = 300, n = 101, stride = 104, scale: Float = 0.125
        var x = (0..<rows * stride).map { i in Float((i &* 2_654_435_761) % 2001) / 40 - 25 }
        let input = x
        var inverseSums = [Float](repeating: .nan, count: stride)
        for isa in KernelISA.allCases where isa.isAvailable {
            x = input
            inverseSums = [Float](repeating: .nan, count: stride)
            isa.withThreadSelection {
                lk_vg_exp_columns(&x, Int64(rows), Int64(n), Int64(stride), scale, &inverseSums)
            }
            var worst = 0.0
            for j in 0..<n {
                let s = (0..<rows).map { Double(scale) * Double(input[$0 * stride + j]) }
                let m = s.max() ?? 0
                let total = s.reduce(0) { $0 + exp($1 - m) }
                for i in 0..<rows {
                    let p = Double(x[i * stride + j]) * Double(inverseSums[j])
                    worst = max(worst, abs(p - exp(s[i] - m) / total))
                }
            }
            for i in 0..<rows { for j in n..<stride { #expect(x[i * stride + j] == input[i * stride + j]) } }
            for j in n..<stride { #expect(inverseSums[j].isNaN) }
            #expect(worst <= 1e-6, "\(isa.name): \(worst)")
        }
    }

    /// lk_vq8_gemm_packed (Q8_0 operands repacked in the path's layout) gives lk_matmul's Q8_0 results bit for
    /// bit, with a partial panel (16 rows), token counts that are not multiples of its passes (3 or 8 tokens),
    /// more blocks than one pass takes (24) and a row range starting past the first panel. It declines operands
    /// of another layout, and every operand on a path with none.
    @Test(arguments: [[16, 32, 16], [45, 864, 17], [64, 768, 100], [100, 96, 23]])
    func q8GemmMatchesMatmul(_ shape: [Int]) throws {
        let (rows, cols, tokens) = (shape[0], shape[1], shape[2])
        var seed: UInt64 = 0x9E37_79B9
        func next() -> Float {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Float(Int64(bitPattern: seed >> 11) % 2001 - 1000) / 1000
        }
        let w = (0..<rows * cols).map { _ in next() }
        let x = (0..<tokens * cols).map { _ in next() }
        let bias = (0..<rows).map { _ in next() }
        let rowBytes = Int(lk_row_bytes(Int32(LK_TYPE_Q8_0), Int64(cols)))
        var wq = [UInt8](repeating: 0, count: rows * rowBytes)
        for r in 0..<rows { w.withUnsafeBufferPointer { lk_quantize_row_q8_0($0.baseAddress! + r * cols, &wq[r * rowBytes], Int64(cols)) } }
        var xq = [UInt8](repeating: 0, count: tokens * rowBytes)
        for t in 0..<tokens { x.withUnsafeBufferPointer { lk_quantize_row_q8_0($0.baseAddress! + t * cols, &xq[t * rowBytes], Int64(cols)) } }
        let panels = (rows + Int(LK_VQ8_PANEL_ROWS) - 1) / Int(LK_VQ8_PANEL_ROWS)
        var ran = Set<Int32>()
        for isa in KernelISA.allCases where isa.isAvailable {
            let ys = rows + 3  // a row stride wider than the rows: the padding must stay untouched
            var want = [Float](repeating: .nan, count: tokens * ys)
            var y = want
            let layout = isa.withThreadSelection { lk_vq8_layout() } ?? Int32(LK_VQ8_NONE)
            // packed in the path's layout (nothing for LK_VQ8_NONE), and in another one the product must decline
            let other = layout == Int32(LK_VQ8_S16_PAIRS) ? Int32(LK_VQ8_U8_QUADS) : Int32(LK_VQ8_S16_PAIRS)
            let packed = PackedOperands(layout: layout, wq, rowBytes: rowBytes, rows: rows, cols: cols, x: x, tokens: tokens, panels: panels)
            let foreign = PackedOperands(layout: other, wq, rowBytes: rowBytes, rows: rows, cols: cols, x: x, tokens: tokens, panels: panels)
            let ok = isa.withThreadSelection { () -> Int32 in
                lk_matmul(Int32(LK_TYPE_Q8_0), wq, rowBytes, Int64(cols), xq, rowBytes, Int64(tokens), &want, Int64(ys), 0, Int64(rows))
                #expect(lk_vq8_gemm_packed(other, foreign.weights, Int64(cols), foreign.x, Int64(tokens), bias, &y, Int64(ys), 0, Int64(rows)) == 0)
                // rows [0, 16) and [16, rows) in two calls, as the thread pool splits them
                let first = min(rows, Int(LK_VQ8_PANEL_ROWS))
                let a = lk_vq8_gemm_packed(layout, packed.weights, Int64(cols), packed.x, Int64(tokens), bias, &y, Int64(ys), 0, Int64(first))
                let b = lk_vq8_gemm_packed(layout, packed.weights, Int64(cols), packed.x, Int64(tokens), bias, &y, Int64(ys), Int64(first), Int64(rows))
                return a == 1 && b == 1 ? 1 : a == 0 && b == 0 ? 0 : -1
            } ?? -1
            #expect(ok == (layout == Int32(LK_VQ8_NONE) ? 0 : 1), "\(isa.name)")
            guard ok == 1 else { continue }
            ran.insert(layout)
            for t in 0..<tokens {
                for r in 0..<rows { #expect(y[t * ys + r] == want[t * ys + r] + bias[r], "\(isa.name) \(shape) [\(t), \(r)]") }
                for r in rows..<ys { #expect(y[t * ys + r].isNaN) }
            }
        }
        #if arch(x86_64)
        // the AVX2 table runs on every CPU these tests run on; the U8 quads wherever AVX-512 VNNI is
        #expect(ran.contains(Int32(LK_VQ8_S16_PAIRS)))
        if lk_cpu_features() & UInt32(LK_CPU_AVX512VNNI) != 0 { #expect(ran.contains(Int32(LK_VQ8_U8_QUADS))) }
        #endif
    }

    /// Every vector table takes the encoders' vector products, not the portable loops: AVX-512 with each AVX-512
    /// table (AMX and llama-order included), AVX2 with AVX2 and AVX-VNNI, NEON with each arm64 level.
    @Test func everyVectorTableTakesVectorProducts() {
        for isa in KernelISA.allCases where isa.isAvailable {
            let want: String
            switch isa {
            case .scalar: want = "portable"
            case .avx2, .avxVNNI: want = "avx2"
            case .avx512, .avx512NoVNNI, .avx512AMX, .llamaOrder: want = "avx512"
            case .neon, .neonDotprod, .neonI8MM: want = "neon"
            }
            #expect(isa.withThreadSelection { String(cString: lk_vg_path()) } == want, "\(isa.name)")
        }
    }

    @Test func gemmRejectsQuantizedWeights() {
        var y = [Float](repeating: 0, count: 4)
        let w = [UInt8](repeating: 0, count: 34 * 4)
        #expect(lk_vision_gemm(Int32(LK_TYPE_Q8_0), w, 34, 32, [Float](repeating: 1, count: 32), 32, 1, &y, 4, 0, 4) == 0)
    }
}

/// W and X packed in one layout (64-byte aligned, as the product's vector loads want); empty for a layout this
/// architecture has not.
private final class PackedOperands {
    let weights: UnsafeMutableRawPointer
    let x: UnsafeMutableRawPointer

    init(layout: Int32, _ wq: [UInt8], rowBytes: Int, rows: Int, cols: Int, x values: [Float], tokens: Int, panels: Int) {
        weights = .allocate(byteCount: max(64, lk_vq8_packed_weight_bytes(layout, Int64(rows), Int64(cols))), alignment: 64)
        x = .allocate(byteCount: max(64, lk_vq8_packed_x_bytes(layout, Int64(tokens), Int64(cols))), alignment: 64)
        _ = lk_vq8_pack_weights(layout, wq, rowBytes, Int64(rows), Int64(cols), weights, 0, Int64(panels))
        lk_vq8_pack_x(layout, values, Int64(cols), Int64(cols), x, 0, Int64(tokens))
    }

    deinit {
        weights.deallocate()
        x.deallocate()
    }
}
