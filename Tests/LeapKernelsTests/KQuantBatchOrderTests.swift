// llama.cpp's per-tensor summation orders for Q4_K and Q6_K on the AVX2 / AVX-512 paths (reference/llama_order_kquant.c)
// against a scalar model of the float steps of ggml's x86 kernels: ggml_gemm/gemv_q4_K_8x8_q8_K (repacked Q4_K,
// arch/x86/repack.cpp) and the tiled K-quant matmul (ggml-cpu/tiled). The integer sums are exact; the
// expectations are the float operations in ggml's order, so the kernels must match them bit for bit.
import CLeapKernels
import Glibc
import LeapGGUF
import LeapKernels
import Testing

/// The paths that implement llama.cpp's orders: the llama-order path (the scalar and NEON paths keep the row
/// kernels' order, AVX2 and AVX-512 have K-quant kernels of their own order: KQuantOwnOrderTests.swift).
private var llamaOrderPaths: [KernelISA] { KernelISA.allCases.filter { $0.isAvailable && $0.kQuantsInLlamaOrder } }

private func le16(_ b: [UInt8], _ o: Int) -> Int16 { Int16(bitPattern: UInt16(b[o]) | UInt16(b[o + 1]) << 8) }
private func f16(_ b: [UInt8], _ o: Int) -> Float { lk_f16_to_f32(UInt16(bitPattern: le16(b, o))) }

/// One Q8_K block of an activation row: d, the 256 quants, the 16 sums of 16.
private struct Q8KBlock {
    let d: Float
    let q: [Int32]
    let bsums: [Int32]
    init(_ b: [UInt8], _ o: Int) {
        d = Float(bitPattern: UInt32(b[o]) | UInt32(b[o + 1]) << 8 | UInt32(b[o + 2]) << 16 | UInt32(b[o + 3]) << 24)
        q = (0..<256).map { Int32(Int8(bitPattern: b[o + 4 + $0])) }
        bsums = (0..<16).map { Int32(le16(b, o + 260 + 2 * $0)) }
    }
}

private func quantizeQ8K(_ x: ArraySlice<Float>) -> [Q8KBlock] {
    var bytes = [UInt8](repeating: 0, count: x.count / 256 * 292)
    Array(x).withUnsafeBufferPointer { lk_quantize_row_q8_K($0.baseAddress!, &bytes, Int64(x.count)) }
    return (0..<(x.count / 256)).map { Q8KBlock(bytes, $0 * 292) }
}

/// Q4_K block at byte `o`: (S_c, M_c) of its four 64-element chunks with activation block `x`, and d, dmin.
private func q4KChunks(_ w: [UInt8], _ o: Int, _ x: Q8KBlock) -> (s: [Int32], m: [Int32], d: Float, dmin: Float) {
    let sc = w[(o + 4)..<(o + 16)].map { $0 }
    func scaleMin(_ j: Int) -> (Int32, Int32) {
        if j < 4 { return (Int32(sc[j] & 63), Int32(sc[j + 4] & 63)) }
        return (Int32((sc[j + 4] & 0xf) | ((sc[j - 4] >> 6) << 4)), Int32((sc[j + 4] >> 4) | ((sc[j] >> 6) << 4)))
    }
    var s: [Int32] = [], m: [Int32] = []
    for c in 0..<4 {
        var lo: Int32 = 0, hi: Int32 = 0
        for l in 0..<32 {
            let byte = w[o + 16 + 32 * c + l]
            lo += Int32(byte & 15) * x.q[64 * c + l]
            hi += Int32(byte >> 4) * x.q[64 * c + 32 + l]
        }
        let (s0, m0) = scaleMin(2 * c), (s1, m1) = scaleMin(2 * c + 1)
        s.append(s0 * lo + s1 * hi)
        m.append(m0 * (x.bsums[4 * c] + x.bsums[4 * c + 1]) + m1 * (x.bsums[4 * c + 2] + x.bsums[4 * c + 3]))
    }
    return (s, m, f16(w, o), f16(w, o + 2))
}

/// Q6_K block at byte `o`: Σ sc · Σ (q − 32)·x and d.
private func q6KSum(_ w: [UInt8], _ o: Int, _ x: Q8KBlock) -> (s: Int32, d: Float) {
    var s: Int32 = 0
    for half in 0..<2 {
        for l in 0..<32 {
            let ql0 = w[o + 64 * half + l], ql1 = w[o + 64 * half + l + 32], qh = w[o + 128 + 32 * half + l]
            let q = [Int32(ql0 & 15) | Int32(qh & 3) << 4, Int32(ql1 & 15) | Int32((qh >> 2) & 3) << 4,
                     Int32(ql0 >> 4) | Int32((qh >> 4) & 3) << 4, Int32(ql1 >> 4) | Int32((qh >> 6) & 3) << 4]
            for k in 0..<4 {
                let e = 128 * half + 32 * k + l
                s += Int32(Int8(bitPattern: w[o + 192 + e / 16])) * (q[k] - 32) * x.q[e]
            }
        }
    }
    return (s, f16(w, o + 208))
}

private enum Order { case gemm, gemv, tiled }

/// ggml's float steps for one (row, token), from the integer sums of each block.
private func reference(_ t: GGMLType, _ order: Order, row w: [UInt8], _ x: [Q8KBlock]) -> Float {
    var acc: Float = 0, accm: Float = 0
    for (i, xb) in x.enumerated() {
        if t == .q6_K {
            let (s, d) = q6KSum(w, i * 210, xb)
            acc = fmaf(Float(s) * d, xb.d, acc)
            continue
        }
        let (s, m, d, dmin) = q4KChunks(w, i * 144, xb)
        switch order {
        case .gemm:
            for c in 0..<4 {
                acc = fmaf(Float(s[c]), d * xb.d, acc)
                accm = fmaf(Float(m[c]), dmin * xb.d, accm)
            }
        case .gemv:
            acc = fmaf(Float(s.reduce(0, +)), d * xb.d, acc)
            accm = fmaf(Float(m.reduce(0, +)), dmin * xb.d, accm)
        case .tiled:
            acc = fmaf(fmaf(-dmin, Float(m.reduce(0, +)), Float(s.reduce(0, +)) * d), xb.d, acc)
        }
    }
    return acc - accm
}

/// Runs `Kernels.matmul` on `path` and checks token t against `order(t)`, or against the token alone.
private func check(_ t: GGMLType, rows: Int, nTokens: Int, path: KernelISA, seed: UInt64, isExpert: Bool = false,
                   order: (Int) -> Order?) throws {
    let cols = 512
    var rng = Rng(seed)
    let wBytes = randomWeights(t, rows: rows, cols: cols, rng: &rng)
    let x = randomActivations(nTokens * cols, rng: &rng)
    let rowBytes = wBytes.count / rows
    try wBytes.withUnsafeBytes { wp in
        var w = try WeightMatrix(type: t, rows: rows, cols: cols, data: wp.baseAddress!)
        w.isExpert = isExpert
        let pool = try ThreadPool(threads: 2)
        var batch = [Float](repeating: .nan, count: nTokens * rows)
        _ = path.withThreadSelection { Kernels.matmul(w, x: x, y: &batch, nTokens: nTokens, pool: pool) }
        for tok in 0..<nTokens {
            let xs = x[(tok * cols)..<((tok + 1) * cols)]
            var want = [Float](repeating: .nan, count: rows)
            if let o = order(tok) {
                let xq = quantizeQ8K(xs)
                for r in 0..<rows { want[r] = reference(t, o, row: Array(wBytes[(r * rowBytes)..<((r + 1) * rowBytes)]), xq) }
            } else {
                _ = path.withThreadSelection { Kernels.matmul(w, x: Array(xs), y: &want, nTokens: 1, pool: pool) }
            }
            let bad = (0..<rows).filter { want[$0].bitPattern != batch[tok * rows + $0].bitPattern }
            #expect(bad.isEmpty, "\(t.name) \(path.name) rows=\(rows) n=\(nTokens) token \(tok): rows \(bad.prefix(4)) differ, e.g. \(bad.first.map { "\(batch[tok * rows + $0]) vs \(want[$0])" } ?? "")")
        }
    }
}

/// Q4_K tensors of a multiple of 8 rows (repacked by ggml): 4-token groups from the first token in the gemm
/// order, the n % 4 tokens left (and decode) in the gemv order; 21 tokens reach the AVX-512 tile kernel.
@Test(arguments: [1, 3, 4, 11, 21])
func q4KRepackedTensorsFollowGgmlGemmAndGemv(nTokens: Int) throws {
    for path in llamaOrderPaths {
        try check(.q4_K, rows: 40, nTokens: nTokens, path: path, seed: 7000 + UInt64(nTokens)) {
            $0 < nTokens - nTokens % 4 ? .gemm : .gemv
        }
    }
}

/// A repacked Q4_K expert (MUL_MAT_ID): ggml_gemv for every routed token, whatever their number.
@Test(arguments: [3, 11, 21])
func q4KRepackedExpertsFollowGgmlGemv(nTokens: Int) throws {
    for path in llamaOrderPaths {
        try check(.q4_K, rows: 40, nTokens: nTokens, path: path, seed: 9000 + UInt64(nTokens), isExpert: true) { _ in .gemv }
    }
}

/// Q6_K tensors, and Q4_K ones ggml does not repack (37 rows): the tiled order from 8 tokens in the batch;
/// below 8 every token gets its one-token result (ggml_vec_dot).
@Test(arguments: [(GGMLType.q6_K, 40), (GGMLType.q6_K, 37), (GGMLType.q4_K, 37)])
func tiledOrderFromEightTokens(_ t: GGMLType, rows: Int) throws {
    for path in llamaOrderPaths {
        for n in [5, 7, 8, 21] {
            try check(t, rows: rows, nTokens: n, path: path, seed: 8000 + UInt64(n)) { _ in n >= 8 ? .tiled : nil }
        }
    }
}
