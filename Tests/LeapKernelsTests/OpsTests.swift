// Float ops against straightforward Float64 references, and f16 conversion against Swift's Float16.
import CLeapKernels
import Glibc
import LeapKernels
import Testing

func close(_ a: [Float], _ b: [Double], rel: Double, abs absTol: Double = 1e-30) -> Bool {
    a.count == b.count && zip(a, b).allSatisfy { abs(Double($0) - $1) <= rel * abs($1) + absTol }
}

@Test func rmsNormMatchesFloat64() {
    var rng = Rng(1)
    let n = 576, rows = 3
    let x = (0..<(n * rows)).map { _ in rng.normal() * 3 }
    let w = (0..<n).map { _ in rng.normal() }
    var y = [Float](repeating: 0, count: n * rows)
    x.withUnsafeBufferPointer { x in y.withUnsafeMutableBufferPointer { y in
        for r in 0..<rows { lk_rms_norm(x.baseAddress! + r * n, w, y.baseAddress! + r * n, Int64(n), 1e-5) }
    } }
    var ref: [Double] = []
    for r in 0..<rows {
        let row = x[(r * n)..<((r + 1) * n)].map(Double.init)
        let s = 1 / (row.reduce(0) { $0 + $1 * $1 } / Double(n) + 1e-5).squareRoot()
        ref += (0..<n).map { row[$0] * s * Double(w[$0]) }
    }
    #expect(close(y, ref, rel: 1e-5, abs: 1e-6))
    var inPlace = x
    inPlace.withUnsafeMutableBufferPointer { p in
        for r in 0..<rows { lk_rms_norm(p.baseAddress! + r * n, nil, p.baseAddress! + r * n, Int64(n), 1e-6) }
    }
    #expect(inPlace[0..<n].reduce(0.0) { $0 + Double($1) * Double($1) } / Double(n) > 0.999)
}

/// ggml's RMSNorm arithmetic bit for bit (float squares summed in double, float mean and 1/sqrtf scale):
/// llama.cpp quantizes the result next, so an ulp here would flip roundings there.
@Test func rmsNormIsBitExactWithGGMLFormula() {
    var rng = Rng(7)
    let n = 640
    let x = (0..<n).map { _ in rng.normal() * 20 }
    let w = (0..<n).map { _ in rng.normal() }
    var y = [Float](repeating: 0, count: n)
    lk_rms_norm(x, w, &y, Int64(n), 1e-6)
    var sum = 0.0
    for v in x { sum += Double(v * v) }
    let mean = Float(sum / Double(n))
    let scale: Float = 1 / (mean + 1e-6).squareRoot()
    #expect((0..<n).allSatisfy { y[$0].bitPattern == (x[$0] * scale * w[$0]).bitPattern })
}

/// llama.cpp's softmax exponentials: same bits on every path, close to exp, masked keys give 0, and the
/// sum accumulates them.
@Test func softmaxExpMatchesExpAndIsIdenticalAcrossPaths() {
    var rng = Rng(3)
    let n = 256 + 7  // 16 chunks and a tail
    var x = (0..<n).map { _ in rng.normal() * 8 }
    x[5] = -.infinity
    x[17] = -200
    let m = x.max() ?? 0
    func run() -> ([Float], Double) {
        var y = [Float](repeating: 0, count: n)
        let s = lk_softmax_exp(x, &y, Int64(n), m)
        return (y, s)
    }
    let (ref, refSum) = KernelISA.scalar.withThreadSelection(run) ?? ([], 0)
    #expect(close(ref, x.map { Glibc.exp(Double($0 - m)) }, rel: 4e-7, abs: 1e-37))
    #expect(ref[5] == 0 && ref[17] == 0)
    #expect(abs(refSum - ref.reduce(0.0) { $0 + Double($1) }) <= 1e-6 * refSum)
    for isa in KernelISA.allCases where isa.isAvailable {
        guard let (y, s) = isa.withThreadSelection(run) else { continue }
        #expect(y.map(\.bitPattern) == ref.map(\.bitPattern) && s == refSum, "[\(isa.name)]")
    }
}

/// llama.cpp's RoPE rotation (x0-products fused): both pairings, against the same formula in Swift.
@Test(arguments: [LK_ROPE_NORM, LK_ROPE_NEOX])
func ropeRotateIsBitExactWithGGMLFormula(mode: Int) {
    var rng = Rng(11)
    let heads = 3, hd = 64, nRot = 64
    let x = (0..<(heads * hd)).map { _ in rng.normal() * 4 }
    let cs = (0..<(nRot / 2)).flatMap { i -> [Float] in let a = Float(i) * 0.37 + 1.1; return [cosf(a), sinf(a)] }
    var y = x
    lk_rope_rotate(&y, Int64(heads), Int64(hd), Int64(nRot), Int32(mode), cs)
    var want = x
    for h in 0..<heads {
        for i in 0..<(nRot / 2) {
            let (a, b) = mode == LK_ROPE_NEOX ? (h * hd + i, h * hd + i + nRot / 2) : (h * hd + 2 * i, h * hd + 2 * i + 1)
            let (x0, x1, c, s) = (x[a], x[b], cs[2 * i], cs[2 * i + 1])
            want[a] = (-(x1 * s)).addingProduct(x0, c)
            want[b] = (x1 * c).addingProduct(x0, s)
        }
    }
    #expect(y.map(\.bitPattern) == want.map(\.bitPattern))
}

func ropeReference(_ x: [Float], nHeads: Int, headDim: Int, nRot: Int, neox: Bool, pos: Double, base: Double, scale: Double) -> [Double] {
    var out = x.map(Double.init)
    for h in 0..<nHeads {
        for i in 0..<(nRot / 2) {
            let theta = pos * scale * Glibc.pow(base, -2.0 * Double(i) / Double(nRot))
            let (a, b) = neox ? (h * headDim + i, h * headDim + i + nRot / 2) : (h * headDim + 2 * i, h * headDim + 2 * i + 1)
            let (xa, xb) = (Double(x[a]), Double(x[b]))
            out[a] = xa * Glibc.cos(theta) - xb * Glibc.sin(theta)
            out[b] = xb * Glibc.cos(theta) + xa * Glibc.sin(theta)
        }
    }
    return out
}

@Test(arguments: [LK_ROPE_NORM, LK_ROPE_NEOX])
func ropeMatchesFloat64(_ mode: Int) {
    var rng = Rng(2)
    let (nHeads, headDim, nTokens) = (3, 64, 4)
    for nRot in [64, 32] { // partial rotation leaves the remaining dims unchanged
        let x = (0..<(nTokens * nHeads * headDim)).map { _ in rng.normal() }
        let positions: [Int32] = [0, 1, 17, 4095]
        var y = x
        y.withUnsafeMutableBufferPointer { y in
            for t in 0..<nTokens {
                lk_rope(y.baseAddress! + t * nHeads * headDim, Int64(nHeads), Int64(headDim), Int64(nRot), Int32(mode),
                        Float(positions[t]), 10000, 0.5)
            }
        }
        for t in 0..<nTokens {
            let slice = Array(x[(t * nHeads * headDim)..<((t + 1) * nHeads * headDim)])
            let ref = ropeReference(slice, nHeads: nHeads, headDim: headDim, nRot: nRot, neox: mode == LK_ROPE_NEOX,
                                    pos: Double(positions[t]), base: 10000, scale: 0.5)
            let got = Array(y[(t * nHeads * headDim)..<((t + 1) * nHeads * headDim)])
            #expect(close(got, ref, rel: 0, abs: 2e-5), "mode \(mode) nRot \(nRot) token \(t)")
        }
    }
}

@Test func softmaxIsStableAndNormalized() {
    var x: [Float] = [1000, 1001, 999, -.infinity, 0]
    lk_softmax(&x, Int64(x.count))
    let e = [0.0, 1, -1].map { Glibc.exp($0) }
    let s = e.reduce(0, +)
    #expect(close(x, [e[0] / s, e[1] / s, e[2] / s, 0, 0], rel: 1e-6, abs: 1e-12))
    var masked: [Float] = [-.infinity, -.infinity]
    lk_softmax(&masked, 2)
    #expect(masked == [0.5, 0.5])
    var rng = Rng(3)
    var big = (0..<4099).map { _ in rng.normal() * 5 }
    let ref = big.map { Glibc.exp(Double($0)) }
    let total = ref.reduce(0, +)
    lk_softmax(&big, Int64(big.count))
    #expect(close(big, ref.map { $0 / total }, rel: 1e-5, abs: 1e-12))
}

/// llama.cpp's SiLU (ggml's expf): same bits on every path, including beyond exp's float range.
@Test func siluIsIdenticalAcrossPaths() {
    let x: [Float] = (0..<2403).map { Float($0 - 1201) / 10 } + [-.infinity, .infinity, 0, -0.0]  // -120.1 ... 120.1
    func run() -> [UInt32] {
        var y = [Float](repeating: 0, count: x.count)
        lk_silu(x, &y, Int64(x.count))
        return y.map(\.bitPattern)
    }
    let ref = KernelISA.scalar.withThreadSelection(run) ?? []
    #expect(Float(bitPattern: ref[0]) == -0 && Float(bitPattern: ref[2402]) == 120.1)
    for isa in KernelISA.allCases where isa.isAvailable {
        #expect(isa.withThreadSelection(run) == ref, "[\(isa.name)]")
    }
}

@Test func siluAndGeluMatchFloat64() {
    let x: [Float] = (0..<2001).map { Float($0 - 1000) / 100 } // -10 ... 10
    var y = [Float](repeating: 0, count: x.count)
    lk_silu(x, &y, Int64(x.count))
    #expect(close(y, x.map { Double($0) / (1 + Glibc.exp(-Double($0))) }, rel: 1e-6, abs: 1e-7))
    lk_gelu_tanh(x, &y, Int64(x.count))
    let gelu = x.map { v -> Double in
        let d = Double(v)
        return 0.5 * d * (1 + Glibc.tanh((2 / Double.pi).squareRoot() * (d + 0.044715 * d * d * d)))
    }
    #expect(close(y, gelu, rel: 1e-6, abs: 1e-6))
}

@Test func elementOps() {
    let a: [Float] = [1, 2, 3, -4, 5], b: [Float] = [0.5, -1, 2, 2, 0]
    var y = [Float](repeating: 0, count: 5)
    lk_mul(a, b, &y, 5)
    #expect(y == [0.5, -2, 6, -8, 0])
    lk_add(a, b, &y, 5)
    #expect(y == [1.5, 1, 5, -2, 5])
    lk_scale(a, -2, &y, 5)
    #expect(y == [-2, -4, -6, 8, -10])
    var h = [UInt16](repeating: 0, count: 5)
    lk_f32_to_f16_row(a, &h, 5)
    var acc: [Float] = [1, 1, 1, 1, 1]
    lk_axpy_f16(5, 0.5, h, &acc)
    #expect(acc == [1.5, 2, 2.5, -1, 3.5])
    #expect(lk_vec_dot(Int32(LK_TYPE_F16), 5, h, b) == 0.5 - 2 + 6 - 8)
}

@Test func f16ConversionMatchesSwiftFloat16() {
    // every half -> float, and a spread of floats -> half (round to nearest even), against Swift's Float16
    for bits in 0...0xffff {
        let want = Float(Float16(bitPattern: UInt16(bits)))
        let got = lk_f16_to_f32(UInt16(bits))
        #expect(got.bitPattern == want.bitPattern || (got.isNaN && want.isNaN))
    }
    var rng = Rng(4)
    var bad = 0
    for i in 0..<200_000 {
        let f = i < 100_000 ? Float(bitPattern: UInt32(truncatingIfNeeded: rng.next()))
            : rng.normal() * Float(Glibc.pow(2.0, Double(Int(rng.next() % 48)) - 30))
        let want = Float16(f).bitPattern, got = lk_f32_to_f16(f)
        if !(got == want || (f.isNaN && (got & 0x7c00) == 0x7c00 && (got & 0x3ff) != 0)) { bad += 1 }
    }
    #expect(bad == 0)
    var roundTrip = [Float](repeating: 0, count: 3)
    lk_f16_to_f32_row([0x3c00, 0xc000, 0x7bff], &roundTrip, 3)
    #expect(roundTrip == [1, -2, 65504])
}

/// The table GELU looks gelu up by the F16 bits of the gate (Swift's Float16 rounding), with the exact ends
/// beyond ±10, and multiplies by the up projection; odd lengths cross the 256-value conversion steps.
@Test func geluTableMulLooksUpByF16Bits() {
    var rng = Rng(11)
    let table = (0..<65536).map { Float(UInt16($0)) * 0.5 - 7 }   // any distinct values: index = f16 bits
    let n = 1000
    var g = (0..<n).map { _ in rng.normal() * 6 }
    g[0] = -10; g[1] = 10; g[2] = -10.5; g[3] = 12; g[4] = 0; g[5] = -0.0; g[6] = 9.999
    let u = (0..<n).map { _ in rng.normal() }
    var y = [Float](repeating: .nan, count: n)
    lk_gelu_table_mul(table, g, u, &y, Int64(n))
    for i in 0..<n {
        let x = g[i]
        let a: Float = x <= -10 ? 0 : x >= 10 ? x : table[Int(Float16(x).bitPattern)]
        #expect(y[i].bitPattern == (a * u[i]).bitPattern, "x = \(x)")
    }
}

/// Attention scores scaled in place and their max: each product is x·s, the max is the largest of them (the
/// position of the max anywhere in the 8-lane pattern, NaNs skipped, -inf for nothing).
@Test(arguments: [0, 1, 7, 8, 9, 31, 100])
func scaleMaxScalesInPlaceAndReturnsTheLargestProduct(n: Int) {
    var rng = Rng(77 + UInt64(n))
    for peak in 0..<max(1, n) {
        var x = (0..<n).map { _ in rng.normal() * 4 }
        if n > 0 { x[peak] = 50 }
        if n > 2 { x[(peak + 1) % n] = .nan }
        let want = x.map { $0 * 0.125 }
        let m = lk_scale_max(&x, 0.125, Int64(n))
        #expect(x.map(\.bitPattern) == want.map(\.bitPattern))
        #expect(m == (n == 0 ? -.infinity : 50 * 0.125))
    }
}
