// Q6_K products whose every float step is exact (d = 1, small integer sub-block scales, activation scale 1):
// then every kernel, whatever its summation order, must give the exact integer Σ w·x, so an integer slip
// of 1 anywhere shows. The activation bytes go to the extremes the quantizer never writes but a kernel's
// s16 arithmetic must survive: −128 in whole sub-blocks, in all 8 bytes that one s16 lane of the AVX2 gemm
// sums (elements 4g, 4g + 1 or 4g + 2, 4g + 3 of a sub-block's 4 groups g), in 15 of 16, alternating with
// 127. One call of 1..15 tokens (matvec, few-token kernels) and gemm calls of 16+ tokens with and without a
// sub-block of 16 × −128 (the AVX2 gemm's folded offsets, and the terms it keeps for that case), on every path.
import CLeapKernels
import LeapGGUF
import LeapKernels
import Testing

private let blockBytes = 210, xBlockBytes = 292 // block_q6_K; block_q8_K: d (f32), qs[256], bsums[16]

/// One Q6_K block of quants q[256] (0..63, the value is q − 32), sub-block scales sc[16], d = 1.
private func q6Block(_ q: [Int], _ sc: [Int8]) -> [UInt8] {
    var b = [UInt8](repeating: 0, count: blockBytes)
    for h in 0..<2 {
        for l in 0..<32 {
            let q1 = q[128 * h + l], q2 = q[128 * h + 32 + l], q3 = q[128 * h + 64 + l], q4 = q[128 * h + 96 + l]
            b[64 * h + l] = UInt8((q1 & 15) | (q3 & 15) << 4)
            b[64 * h + 32 + l] = UInt8((q2 & 15) | (q4 & 15) << 4)
            b[128 + 32 * h + l] = UInt8(q1 >> 4 | (q2 >> 4) << 2 | (q3 >> 4) << 4 | (q4 >> 4) << 6)
        }
    }
    for j in 0..<16 { b[192 + j] = UInt8(bitPattern: sc[j]) }
    b[208] = 0x00; b[209] = 0x3C // f16 1.0
    return b
}

/// One Q8_K block of activation bytes v[256], d = 1, bsums the sums of 16.
private func q8KBlock(_ v: [Int8]) -> [UInt8] {
    var b = [UInt8](repeating: 0, count: xBlockBytes)
    withUnsafeBytes(of: Float(1).bitPattern.littleEndian) { for i in 0..<4 { b[i] = $0[i] } }
    for i in 0..<256 { b[4 + i] = UInt8(bitPattern: v[i]) }
    for j in 0..<16 {
        let s = Int16(v[(16 * j)..<(16 * j + 16)].reduce(0) { $0 + Int($1) })
        b[260 + 2 * j] = UInt8(truncatingIfNeeded: s)
        b[261 + 2 * j] = UInt8(truncatingIfNeeded: s >> 8)
    }
    return b
}

/// Activation bytes of token `t`: token 0 is all −128; the others put −128 in lane patterns per sub-block.
private func extremeActivations(token t: Int, count n: Int, rng: inout Rng) -> [Int8] {
    (0..<n).map { i in
        let e = i % 16, g = e / 4, k = e % 4
        let random = Int8(bitPattern: rng.byte())
        switch t {
        case 0: return -128
        case 1: return k < 2 ? -128 : random                 // the even s16 lane of every group
        case 2: return k >= 2 ? -128 : random                // the odd lane
        case 3: return e == 15 ? 127 : -128                  // 15 of 16
        case 4: return e % 2 == 0 ? -128 : 127               // alternating
        case 5: return g % 2 == 0 && k < 2 ? -128 : 127      // half the even lane, the rest at the top
        default: return rng.uniform() < 0.3 ? -128 : random  // scattered
        }
    }
}

@Test func q6_KProductsAreExactIntegersOnEveryPathAtExtremeActivations() throws {
    let rows = 37, cols = 3 * 256, nb = cols / 256, nTokens = 20
    var rng = Rng(6600)
    var w: [UInt8] = [] // [rows, nb · 210]
    for _ in 0..<rows {
        for _ in 0..<nb {
            let q = (0..<256).map { _ in Int(rng.next() % 64) }
            let sc = (0..<16).map { _ in Int8([-2, -1, 1, 2, 3][Int(rng.next() % 5)]) }
            w += q6Block(q, sc)
        }
    }
    // rows 0 and 1: all quants at the ends of their range
    for b in 0..<nb {
        w.replaceSubrange(b * blockBytes..<(b + 1) * blockBytes, with: q6Block([Int](repeating: 0, count: 256), [Int8](repeating: 3, count: 16)))
        let o = (nb + b) * blockBytes
        w.replaceSubrange(o..<(o + blockBytes), with: q6Block([Int](repeating: 63, count: 256), [Int8](repeating: -2, count: 16)))
    }
    let acts = (0..<nTokens).map { extremeActivations(token: $0, count: cols, rng: &rng) } // [nTokens][cols]
    var x: [UInt8] = [] // [nTokens, nb · 292]
    for t in 0..<nTokens { for b in 0..<nb { x += q8KBlock(Array(acts[t][(256 * b)..<(256 * b + 256)])) } }
    let wf = dequantizeAll(.q6_K, w, count: rows * cols) // d·sc·(q − 32), exact small integers
    let xRow = nb * xBlockBytes, wRow = nb * blockBytes
    func exact(_ t: Int, _ r: Int) -> Float {
        var s = 0.0
        for i in 0..<cols { s += Double(wf[r * cols + i]) * Double(acts[t][i]) }
        return Float(s) // |s| < 2^24: exact
    }
    /// lk_matmul of tokens first..<first + n over all rows on `isa`: [n, rows]
    func run(_ isa: KernelISA, first: Int, tokens n: Int) -> [Float] {
        var y = [Float](repeating: .nan, count: n * rows)
        _ = isa.withThreadSelection {
            w.withUnsafeBytes { wp in
                x.withUnsafeBytes { xp in
                    lk_matmul(Int32(LK_TYPE_Q6_K), wp.baseAddress!, wRow, Int64(cols), xp.baseAddress! + first * xRow, xRow,
                              Int64(n), &y, Int64(rows), 0, Int64(rows))
                }
            }
        }
        return y
    }
    // (first token, token count): one-token calls, few-token passes, gemm calls with and without token 0
    let calls = (0..<nTokens).map { ($0, 1) } + [(1, 4), (3, 7), (1, 15), (1, 16), (1, 19), (0, 20), (0, 16)]
    for isa in KernelISA.allCases where isa.isAvailable {
        for (first, n) in calls {
            let y = run(isa, first: first, tokens: n)
            var bad: [String] = []
            for t in 0..<n {
                for r in 0..<rows where y[t * rows + r].bitPattern != exact(first + t, r).bitPattern {
                    bad.append("y[token \(first + t), row \(r)] = \(y[t * rows + r]), exact \(exact(first + t, r))")
                }
            }
            #expect(bad.isEmpty, "[\(isa.name)] tokens \(first)..<\(first + n): \(bad.count) outputs off, first \(bad.first ?? "")")
        }
    }
}
