// Every SIMD path equals the portable scalar path (the reference) for every type, at odd sizes.
import CLeapKernels
import Glibc
import LeapGGUF
import LeapKernels
import Testing

/// Element counts per row to test for a type: odd block counts (and odd element counts for float types).
func testWidths(_ t: GGMLType) -> [Int] {
    switch t.blockSize {
    case 1: return [1, 3, 7, 15, 16, 17, 31, 33, 63, 65, 129, 257, 576, 1000]
    case 32: return [1, 2, 3, 5, 7, 9, 17, 18].map { $0 * 32 }
    default: return [1, 2, 3, 5].map { $0 * 256 }
    }
}

/// Σ |w'_i · x'_i| in Float64 over dequantized operands: the scale that float rounding errors are relative to.
func absDotScale(_ w: [Float], _ x: [Float]) -> Double {
    zip(w, x).reduce(0.0) { $0 + abs(Double($1.0) * Double($1.1)) }
}

@Test(arguments: weightTypes)
func simdDotEqualsScalar(_ t: GGMLType) throws {
    var rng = Rng(UInt64(t.rawValue) &+ 11)
    let act = GGMLType(rawValue: UInt32(lk_activation_type(Int32(t.rawValue)))) ?? .f32
    for n in testWidths(t) {
        let w = randomWeights(t, rows: 1, cols: n, rng: &rng)
        let x = randomActivations(n, rng: &rng)
        var xq = [UInt8](repeating: 0, count: max(4, Int(lk_row_bytes(Int32(act.rawValue), Int64(n)))))
        lk_quantize_row_q8_dispatch(act, x, &xq, n, isa: .scalar)
        let wDeq = dequantizeAll(t, w, count: n)
        let xDeq = act == .f32 ? x : dequantizeAll(act, xq, count: n)
        let tol = 2e-6 * absDotScale(wDeq, xDeq) + 1e-30
        let ref = KernelISA.scalar.withThreadSelection { lk_vec_dot(Int32(t.rawValue), Int64(n), w, xq) } ?? .nan
        for isa in simdPaths {
            let got = isa.withThreadSelection { lk_vec_dot(Int32(t.rawValue), Int64(n), w, xq) } ?? .nan
            #expect(abs(Double(got) - Double(ref)) <= tol, "\(t.name) n=\(n) [\(isa.name)]: \(got) vs scalar \(ref)")
        }
    }
}

/// Quantizes with a given path (activation types only; F32 = copy).
func lk_quantize_row_q8_dispatch(_ act: GGMLType, _ x: [Float], _ y: inout [UInt8], _ n: Int, isa: KernelISA) {
    isa.withThreadSelection {
        x.withUnsafeBufferPointer { xp in y.withUnsafeMutableBytes { yp in
            lk_quantize_row(Int32(act.rawValue), xp.baseAddress!, yp.baseAddress!, Int64(n))
        } }
    }
}

@Test(arguments: [GGMLType.q8_0, .q8_1, .q8_K])
func simdQuantizeEqualsScalar(_ act: GGMLType) {
    var rng = Rng(UInt64(act.rawValue) &+ 99)
    for blocks in [1, 2, 3, 7, 9] {
        let n = blocks * act.blockSize
        var x = randomActivations(n, rng: &rng)
        // special blocks: all zero, a single value, exact multiples of the scale (ties in x/d)
        if blocks >= 3 {
            for i in 0..<act.blockSize { x[i] = 0 }
            for i in act.blockSize..<(2 * act.blockSize) { x[i] = i == act.blockSize + 5 ? -3.5 : 0 }
            for i in (2 * act.blockSize)..<(3 * act.blockSize) { x[i] = Float(i % 17) * 0.5 - 4 }
        }
        var ref = [UInt8](repeating: 0, count: Int(lk_row_bytes(Int32(act.rawValue), Int64(n))))
        lk_quantize_row_q8_dispatch(act, x, &ref, n, isa: .scalar)
        for isa in simdPaths {
            var got = [UInt8](repeating: 0xAA, count: ref.count)
            lk_quantize_row_q8_dispatch(act, x, &got, n, isa: isa)
            #expect(got == ref, "\(act.name) blocks=\(blocks) [\(isa.name)] differs from scalar")
        }
    }
}

@Test(arguments: weightTypes)
func simdMatmulEqualsScalar(_ t: GGMLType) throws {
    var rng = Rng(UInt64(t.rawValue) &+ 7)
    let pool = try ThreadPool(threads: 2)
    // the widest width: float weights in several column passes of the gemm tile, with a ragged end
    for cols in [testWidths(t)[2], testWidths(t).last ?? 0] {
    // 16+ tokens: the AVX-512 VNNI gemm kernels (whole tiles, a partial last tile, 8-token steps plus a tail)
    for (rows, nTokens) in [(1, 1), (2, 1), (37, 1), (5, 3), (19, 4), (37, 9), (64, 5), (16, 16), (37, 21), (50, 43)] {
        let wBytes = randomWeights(t, rows: rows, cols: cols, rng: &rng)
        let x = randomActivations(nTokens * cols, rng: &rng)
        func run(_ isa: KernelISA) -> [Float] {
            var y = [Float](repeating: .nan, count: nTokens * rows)
            isa.withThreadSelection {
                wBytes.withUnsafeBytes { wp in
                    let w = try! WeightMatrix(type: t, rows: rows, cols: cols, data: wp.baseAddress!)
                    Kernels.matmul(w, x: x, y: &y, nTokens: nTokens, pool: pool)
                }
            }
            return y
        }
        let ref = run(.scalar)
        let wDeq = dequantizeAll(t, wBytes, count: rows * cols)
        for isa in simdPaths {
            let got = run(isa)
            for tok in 0..<nTokens {
                for r in 0..<rows {
                    let scale = absDotScale(Array(wDeq[(r * cols)..<((r + 1) * cols)]), Array(x[(tok * cols)..<((tok + 1) * cols)]))
                    let (g, e) = (got[tok * rows + r], ref[tok * rows + r])
                    #expect(abs(Double(g) - Double(e)) <= 2e-6 * scale + 1e-30,
                            "\(t.name) cols=\(cols) rows=\(rows) tokens=\(nTokens) [\(isa.name)] y[\(tok),\(r)] = \(g) vs scalar \(e)")
                }
            }
        }
    }
    }
}

@Test func simdF16ConversionsEqualScalar() {
    var rng = Rng(5)
    // every f16 bit pattern, and floats around the f16 range (normals, subnormals, overflow, ties)
    let halves = (0..<65536).map { UInt16($0) }
    var floats: [Float] = (0..<20000).map { _ in Float(bitPattern: UInt32(truncatingIfNeeded: rng.next())) }
    floats += (0..<20000).map { _ in rng.normal() * Float(Glibc.pow(2.0, Double(Int(rng.next() % 50)) - 30)) }
    floats += [0, -0, 65504, 65520, 65519.99, -65520, 1e-8, 6e-8, 3e-8, .infinity, -.infinity, .nan]
    func conv(_ isa: KernelISA) -> ([Float], [UInt16]) {
        var f = [Float](repeating: 0, count: halves.count)
        var h = [UInt16](repeating: 0, count: floats.count)
        isa.withThreadSelection {
            lk_f16_to_f32_row(halves, &f, Int64(halves.count))
            lk_f32_to_f16_row(floats, &h, Int64(floats.count))
        }
        return (f, h)
    }
    let (rf, rh) = conv(.scalar)
    for isa in simdPaths {
        let (gf, gh) = conv(isa)
        let badF = (0..<rf.count).filter { !(rf[$0].isNaN && gf[$0].isNaN) && rf[$0].bitPattern != gf[$0].bitPattern }
        let badH = (0..<rh.count).filter {
            let nan = (rh[$0] & 0x7c00) == 0x7c00 && (rh[$0] & 0x3ff) != 0
            let gnan = (gh[$0] & 0x7c00) == 0x7c00 && (gh[$0] & 0x3ff) != 0
            return !(nan && gnan) && rh[$0] != gh[$0]
        }
        #expect(badF.isEmpty, "[\(isa.name)] f16->f32 differs at \(badF.prefix(5))")
        #expect(badH.isEmpty, "[\(isa.name)] f32->f16 differs at \(badH.prefix(5).map { floats[$0] })")
    }
}

/// One-token matvec over the shapes where the AVX-512 VNNI matvec kernels (even block counts, rows in groups
/// of four a quarter of the range apart, leftover rows one by one) take over from the row kernels.
@Test(arguments: weightTypes.filter { $0.blockSize == 32 })
func simdMatvecEqualsScalar(_ t: GGMLType) throws {
    var rng = Rng(UInt64(t.rawValue) &+ 11)
    let pool = try ThreadPool(threads: 2)
    for cols in [2, 4, 18, 48].map({ $0 * 32 }) {
        for rows in [1, 3, 4, 7, 37, 64] {
            let wBytes = randomWeights(t, rows: rows, cols: cols, rng: &rng)
            let x = randomActivations(cols, rng: &rng)
            func run(_ isa: KernelISA) -> [Float] {
                var y = [Float](repeating: .nan, count: rows)
                isa.withThreadSelection {
                    wBytes.withUnsafeBytes { wp in
                        let w = try! WeightMatrix(type: t, rows: rows, cols: cols, data: wp.baseAddress!)
                        Kernels.matmul(w, x: x, y: &y, nTokens: 1, pool: pool)
                    }
                }
                return y
            }
            let ref = run(.scalar)
            let wDeq = dequantizeAll(t, wBytes, count: rows * cols)
            for isa in simdPaths {
                let got = run(isa)
                for r in 0..<rows {
                    let scale = absDotScale(Array(wDeq[(r * cols)..<((r + 1) * cols)]), x)
                    #expect(abs(Double(got[r]) - Double(ref[r])) <= 2e-6 * scale + 1e-30,
                            "\(t.name) cols=\(cols) rows=\(rows) [\(isa.name)] y[\(r)] = \(got[r]) vs scalar \(ref[r])")
                }
            }
        }
    }
}
