// matvec / matmul against dequantize-then-float references, and matmul == repeated matvec.
import CLeapKernels
import LeapGGUF
import LeapKernels
import Testing

/// f16 field at `offset` of the block starting at `base`.
func f16At(_ b: [UInt8], _ base: Int, _ offset: Int) -> Double {
    Double(lk_f16_to_f32(UInt16(b[base + offset]) | UInt16(b[base + offset + 1]) << 8))
}

struct MatmulCase {
    let type: GGMLType
    let rows: Int
    let cols: Int
    let nTokens: Int
    let wBytes: [UInt8]
    let x: [Float] // [nTokens, cols]

    init(_ t: GGMLType, rows: Int, nTokens: Int, seed: UInt64) {
        var rng = Rng(seed)
        type = t
        self.rows = rows
        cols = t.blockSize == 256 ? 512 : 544 // 2 super-blocks / 17 blocks
        self.nTokens = nTokens
        wBytes = randomWeights(t, rows: rows, cols: cols, rng: &rng)
        x = randomActivations(nTokens * cols, rng: &rng)
    }

    func run(pool: ThreadPool) -> [Float] { // [nTokens, rows]
        var y = [Float](repeating: .nan, count: nTokens * rows)
        wBytes.withUnsafeBytes { wp in
            let w = try! WeightMatrix(type: type, rows: rows, cols: cols, data: wp.baseAddress!)
            Kernels.matmul(w, x: x, y: &y, nTokens: nTokens, pool: pool)
        }
        return y
    }
}

let matmulTypes: [GGMLType] = weightTypes

/// With the activations exactly as quantized, the kernel result is an exact integer dot product times the
/// block scales: it must equal Σ w'·x' in Float64 up to float rounding (Q4_1/Q5_1 use the stored
/// s = d·Σq of the Q8_1 block for the min term, exactly as ggml does).
@Test(arguments: matmulTypes)
func matmulEqualsDequantizedDotOfQuantizedActivations(_ t: GGMLType) throws {
    let pool = try ThreadPool(threads: 2)
    let c = MatmulCase(t, rows: 13, nTokens: 6, seed: 1000 + UInt64(t.rawValue))
    let y = c.run(pool: pool)
    let act = GGMLType(rawValue: UInt32(lk_activation_type(Int32(t.rawValue)))) ?? .f32
    let wDeq = dequantizeAll(t, c.wBytes, count: c.rows * c.cols)
    let actRow = Int(lk_row_bytes(Int32(act.rawValue), Int64(c.cols)))
    for tok in 0..<c.nTokens {
        let xt = Array(c.x[(tok * c.cols)..<((tok + 1) * c.cols)])
        var xq = [UInt8](repeating: 0, count: max(actRow, 4))
        lk_quantize_row(Int32(act.rawValue), xt, &xq, Int64(c.cols))
        let xDeq = act == .f32 ? xt : dequantizeAll(act, xq, count: c.cols)
        for r in 0..<c.rows {
            let w = Array(wDeq[(r * c.cols)..<((r + 1) * c.cols)])
            var ref = zip(w, xDeq).reduce(0.0) { $0 + Double($1.0) * Double($1.1) }
            if act == .q8_1 { // ref += Σ_b m_b · (s_b − Σ_j x'_j)
                for b in 0..<(c.cols / 32) {
                    let m = f16At(c.wBytes, (r * c.cols / 32 + b) * t.blockBytes, 2)
                    let s = f16At(xq, b * 36, 2)
                    let sumx = xDeq[(b * 32)..<(b * 32 + 32)].reduce(0.0) { $0 + Double($1) }
                    ref += m * (s - sumx)
                }
            }
            let got = Double(y[tok * c.rows + r])
            let tol = 2e-6 * absDotScale(w, xDeq) + 1e-30
            #expect(abs(got - ref) <= tol, "\(t.name) y[\(tok),\(r)] = \(got), expected \(ref) ± \(tol)")
        }
    }
}

/// Against the float activations: the error is bounded by the 8-bit activation rounding, per element
/// |x − x'| ≤ amax_block/254 (+ amax·2⁻¹¹ for the f16 block scale of Q8_0/Q8_1), plus the Q8_1 s rounding.
@Test(arguments: matmulTypes)
func matmulEqualsFloatMatmulWithinActivationQuantizationError(_ t: GGMLType) throws {
    let pool = try ThreadPool(threads: 2)
    let c = MatmulCase(t, rows: 11, nTokens: 5, seed: 2000 + UInt64(t.rawValue))
    let y = c.run(pool: pool)
    let act = GGMLType(rawValue: UInt32(lk_activation_type(Int32(t.rawValue)))) ?? .f32
    let wDeq = dequantizeAll(t, c.wBytes, count: c.rows * c.cols)
    let qb = act == .f32 ? 1 : act.blockSize
    var maxRel = 0.0
    for tok in 0..<c.nTokens {
        let xt = Array(c.x[(tok * c.cols)..<((tok + 1) * c.cols)])
        for r in 0..<c.rows {
            let w = Array(wDeq[(r * c.cols)..<((r + 1) * c.cols)])
            let ref = zip(w, xt).reduce(0.0) { $0 + Double($1.0) * Double($1.1) }
            var bound = 2e-6 * absDotScale(w, xt) + 1e-30
            if act != .f32 {
                for b in 0..<(c.cols / qb) {
                    let xs = xt[(b * qb)..<((b + 1) * qb)], ws = w[(b * qb)..<((b + 1) * qb)]
                    let amax = xs.reduce(0.0) { max($0, abs(Double($1))) }
                    let perElem = amax / 254 + (act == .q8_K ? 0 : amax / 2048)
                    bound += ws.reduce(0.0) { $0 + abs(Double($1)) } * perElem * 1.01
                    if act == .q8_1 { // s = f16(d·Σq): its rounding and the f16 d, times the block min
                        let m = f16At(c.wBytes, (r * c.cols / 32 + b) * t.blockBytes, 2)
                        bound += abs(m) * (amax * 32 * 2.0 / 2048 + 32 * amax / 254) * 1.01
                    }
                }
            }
            let got = Double(y[tok * c.rows + r])
            #expect(abs(got - ref) <= bound, "\(t.name) y[\(tok),\(r)] = \(got), float reference \(ref), bound \(bound)")
            maxRel = max(maxRel, abs(got - ref) / max(1e-12, absDotScale(w, xt)))
        }
    }
    // the bound is a worst case; typical errors are far smaller (cancellation across blocks)
    #expect(maxRel < (act == .f32 ? 1e-5 : 0.02), "\(t.name): worst error relative to Σ|w·x| = \(maxRel)")
}

@Test(arguments: matmulTypes)
func matmulOfNTokensEqualsNMatvecs(_ t: GGMLType) throws {
    let pool = try ThreadPool(threads: 2)
    let c = MatmulCase(t, rows: 40, nTokens: 11, seed: 3000 + UInt64(t.rawValue))
    let batch = c.run(pool: pool)
    let wDeq = dequantizeAll(t, c.wBytes, count: c.rows * c.cols)
    c.wBytes.withUnsafeBytes { wp in
        let w = try! WeightMatrix(type: t, rows: c.rows, cols: c.cols, data: wp.baseAddress!)
        for tok in 0..<c.nTokens {
            var y = [Float](repeating: .nan, count: c.rows)
            c.x.withUnsafeBufferPointer { xp in Kernels.matvec(w, x: xp.baseAddress! + tok * c.cols, y: &y, pool: pool) }
            for r in 0..<c.rows {
                let scale = absDotScale(Array(wDeq[(r * c.cols)..<((r + 1) * c.cols)]), Array(c.x[(tok * c.cols)..<((tok + 1) * c.cols)]))
                #expect(abs(Double(y[r]) - Double(batch[tok * c.rows + r])) <= 2e-6 * scale + 1e-30,
                        "\(t.name) token \(tok) row \(r): matvec \(y[r]) vs matmul \(batch[tok * c.rows + r])")
            }
        }
    }
}

@Test func weightMatrixRejectsBadShapes() {
    let buf = [UInt8](repeating: 0, count: 1024)
    buf.withUnsafeBytes { p in
        #expect(throws: (any Error).self) { try WeightMatrix(type: .q4_0, rows: 2, cols: 48, data: p.baseAddress!) }
        #expect(throws: (any Error).self) { try WeightMatrix(type: .q4_K, rows: 1, cols: 128, data: p.baseAddress!) }
        #expect(throws: (any Error).self) { try WeightMatrix(type: .q8_K, rows: 1, cols: 256, data: p.baseAddress!) }
        #expect(throws: (any Error).self) { try WeightMatrix(type: .f32, rows: 0, cols: 4, data: p.baseAddress!) }
        #expect((try? WeightMatrix(type: .q4_0, rows: 2, cols: 64, data: p.baseAddress!))?.rowBytes == 36)
    }
}

@Test func getRowsLooksUpEmbeddingsAndRejectsBadIds() throws {
    var rng = Rng(77)
    let (rows, cols) = (10, 64)
    let bytes = randomWeights(.q8_0, rows: rows, cols: cols, rng: &rng)
    let all = dequantizeAll(.q8_0, bytes, count: rows * cols)
    try bytes.withUnsafeBytes { p in
        let w = try WeightMatrix(type: .q8_0, rows: rows, cols: cols, data: p.baseAddress!)
        let ids: [Int32] = [3, 0, 9, 3]
        var out = [Float](repeating: .nan, count: ids.count * cols)
        try ids.withUnsafeBufferPointer { try Kernels.getRows(w, ids: $0, out: &out) }
        for (i, id) in ids.enumerated() {
            #expect(Array(out[(i * cols)..<((i + 1) * cols)]) == Array(all[(Int(id) * cols)..<((Int(id) + 1) * cols)]))
        }
        let bad: [Int32] = [1, 10]
        #expect(throws: (any Error).self) { try bad.withUnsafeBufferPointer { try Kernels.getRows(w, ids: $0, out: &out) } }
        #expect(throws: (any Error).self) { try Kernels.dequantizeRow(w, row: -1, into: &out) }
    }
}

/// Batch invariance: a token's outputs do not depend on how many tokens share the call (the batched
/// kernels, e.g. the AVX-512 VNNI gemm tiles from 16 tokens, reproduce the one-token path bit for bit), so
/// a prompt evaluated in one batch and token by token gives identical logits. Not for Q4_K and Q6_K on the
/// AVX2 / AVX-512 paths, which sum in llama.cpp's batch-dependent orders (KQuantBatchOrderTests.swift), nor
/// for Q5_K on AVX2 / AVX-512 VNNI, whose gemm and matvec sum in different orders (KQuantOwnOrderTests.swift),
/// nor for the types the AMX path multiplies on its tile unit from 16 tokens (AMXTests.swift).
@Test(arguments: matmulTypes)
func batchedMatmulIsBitIdenticalToOneTokenCalls(_ t: GGMLType) throws {
    if KernelISA.current == .avx512AMX, [.q4_0, .q8_0, .q4_K, .q5_K, .q6_K].contains(t) { return }
    if t == .q4_K || t == .q6_K, KernelISA.current != .scalar, !KernelISA.current.isArm { return }
    if t == .q5_K, KernelISA.current.kQuantsInOwnOrder { return }
    let pool = try ThreadPool(threads: 2)
    let widths = t.blockSize == 1 ? [100, 576, 1024] : t.blockSize == 32 ? [544, 576] : [512, 768] // odd and even block counts
    for cols in widths {
        var rng = Rng(4000 + UInt64(t.rawValue) + UInt64(cols))
        let rows = 37, nTokens = 21 // a partial 16-row tile; 16+ tokens
        let wBytes = randomWeights(t, rows: rows, cols: cols, rng: &rng)
        let x = randomActivations(nTokens * cols, rng: &rng)
        wBytes.withUnsafeBytes { wp in
            let w = try! WeightMatrix(type: t, rows: rows, cols: cols, data: wp.baseAddress!)
            var batch = [Float](repeating: .nan, count: nTokens * rows)
            Kernels.matmul(w, x: x, y: &batch, nTokens: nTokens, pool: pool)
            for tok in 0..<nTokens {
                var one = [Float](repeating: .nan, count: rows)
                Kernels.matmul(w, x: Array(x[(tok * cols)..<((tok + 1) * cols)]), y: &one, nTokens: 1, pool: pool)
                let same = (0..<rows).allSatisfy { one[$0].bitPattern == batch[tok * rows + $0].bitPattern }
                #expect(same, "\(t.name) cols=\(cols) token \(tok): batched and one-token results differ")
            }
        }
    }
}
