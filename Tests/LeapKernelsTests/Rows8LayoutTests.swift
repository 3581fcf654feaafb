// The 8-row weight layout (LK_ROWS8): packing, reading rows back, and products equal to the row layout's
// (Q4_0, Q8_0) or to the VNNI gemm's at every batch size (Q4_K, Q5_K, Q6_K), or (Q4_1, Q5_0, Q5_1 on AVX2) to
// each token's alone.
import Glibc
import CLeapKernels
import LeapGGUF
import LeapKernels
import LeapTestFiles
import Testing

private func packedCopy(_ w: [UInt8], _ t: GGMLType = .q4_0, rows: Int, cols: Int) -> [UInt8]? {
    var out = [UInt8](repeating: 0, count: w.count)
    let ok = w.withUnsafeBytes { wp in
        out.withUnsafeMutableBytes { op in
            lk_rows8_pack(Int32(t.rawValue), wp.baseAddress!, t.rowBytes(cols)!, Int64(rows), Int64(cols), op.baseAddress!)
        }
    }
    return ok == 1 ? out : nil
}

/// Random weights of type t in the row layout (w) and packed (p), and activations of `tokens` tokens: body
/// runs once per available kernel path, with that path selected for the calling thread.
private func withPackedCase(_ t: GGMLType, rows: Int, cols: Int, seed: UInt64, tokens: Int,
                            _ body: (_ isa: KernelISA, _ w: WeightMatrix, _ p: WeightMatrix, _ x: [Float]) -> Void) throws {
    var rng = Rng(seed)
    let wBytes = randomWeights(t, rows: rows, cols: cols, rng: &rng)
    let pBytes = try #require(packedCopy(wBytes, t, rows: rows, cols: cols))
    let x = randomActivations(tokens * cols, rng: &rng)
    for isa in KernelISA.allCases where isa.isAvailable {
        isa.withThreadSelection {
            wBytes.withUnsafeBytes { wp in
                pBytes.withUnsafeBytes { pp in
                    let w = try! WeightMatrix(type: t, rows: rows, cols: cols, data: wp.baseAddress!)
                    var p = try! WeightMatrix(type: t, rows: rows, cols: cols, data: pp.baseAddress!)
                    p.rows8 = true
                    body(isa, w, p, x)
                }
            }
        }
    }
}

/// Tokens first..<first + n of activations x (rows of m.cols) times m, in one call: [n, m.rows].
private func tokensProduct(_ m: WeightMatrix, _ x: [Float], first: Int, n: Int, pool: ThreadPool) -> [Float] {
    var y = [Float](repeating: .nan, count: n * m.rows)
    Kernels.matmul(m, x: Array(x[(first * m.cols)..<((first + n) * m.cols)]), y: &y, nTokens: n, pool: pool)
    return y
}

/// Every row read back out of the layout is the original row, byte for byte; the packed bytes are a
/// permutation of the original ones (same size, same multiset), and other types and shapes are refused.
@Test(arguments: [GGMLType.q4_0, .q4_1, .q5_0, .q5_1, .q8_0, .q4_K, .q5_K, .q6_K])
func rows8PackingRoundTrips(_ t: GGMLType) throws {
    var rng = Rng(81)
    let rows = 24, cols = 5 * t.blockSize, rowBytes = t.rowBytes(cols)!
    let w = randomWeights(t, rows: rows, cols: cols, rng: &rng)
    let p = try #require(packedCopy(w, t, rows: rows, cols: cols))
    #expect(p != w && p.sorted() == w.sorted())
    for r in 0..<rows {
        var row = [UInt8](repeating: 0, count: rowBytes)
        p.withUnsafeBytes { pp in
            row.withUnsafeMutableBytes { lk_rows8_row(Int32(t.rawValue), pp.baseAddress!, rowBytes, Int64(cols), Int64(r), $0.baseAddress!) }
        }
        #expect(row == Array(w[(r * rowBytes)..<((r + 1) * rowBytes)]), "row \(r)")
    }
    #expect(packedCopy(Array(w[0..<(12 * rowBytes)]), t, rows: 12, cols: cols) == nil, "12 rows are not whole groups")
    var out = [UInt8](repeating: 0, count: 8 * 110)
    let q3 = [UInt8](repeating: 0, count: 8 * 110)
    let refused = q3.withUnsafeBytes { wp in out.withUnsafeMutableBytes {
        lk_rows8_pack(Int32(LK_TYPE_Q3_K), wp.baseAddress!, 110, 8, 256, $0.baseAddress!) } }
    #expect(refused == 0 && out.allSatisfy { $0 == 0 })
}

/// Products from the packed layout equal the row layout's bit for bit at every batch size (the tile kernels
/// up to 15 tokens, the gemm from 16; Q8_0 on AVX-512 VNNI up to 47 and from 48, over chunks of 64 tokens and
/// their remainders; row ranges split at multiples of 8 across 2 threads) on every path: the AVX2 and AVX-512
/// paths read the layout, the others copy rows back out.
@Test(arguments: [GGMLType.q4_0, .q8_0])
func rows8ProductsEqualTheRowLayoutsOnEveryPath(_ t: GGMLType) throws {
    let pool = try ThreadPool(threads: 2)
    for (rows, cols) in [(40, 7 * 32), (64, 72 * 32)] {
        try withPackedCase(t, rows: rows, cols: cols, seed: 82 + UInt64(rows), tokens: 70) { isa, w, p, x in
            for n in [1, 2, 3, 4, 5, 8, 15, 16, 17, 33, 47, 48, 49, 70] {
                var a = [Float](repeating: .nan, count: n * rows), b = a
                Kernels.matmul(w, x: Array(x[0..<(n * cols)]), y: &a, nTokens: n, pool: pool)
                Kernels.matmul(p, x: Array(x[0..<(n * cols)]), y: &b, nTokens: n, pool: pool)
                let same = (0..<(n * rows)).allSatisfy { a[$0].bitPattern == b[$0].bitPattern }
                #expect(same, "\(t.name) [\(isa.name)] \(rows)x\(cols), \(n) tokens: packed products differ")
            }
            var r1 = [Float](repeating: 0, count: cols), r2 = r1
            try! Kernels.dequantizeRow(w, row: rows - 3, into: &r1)
            try! Kernels.dequantizeRow(p, row: rows - 3, into: &r2)
            #expect(r1 == r2, "[\(isa.name)] dequantized row")
        }
    }
}

/// Q4_K, Q5_K and Q6_K packed: on AVX-512 VNNI one kernel takes every batch size with the gemm's operations per
/// (row, token), so each token of an n-token call gets its bits alone, and from 8 tokens (Q6_K: 16; where the row layout
/// takes the gemm) the row layout's bits. Q4_K on AVX2 and AVX-VNNI: the row layout's kernels read the layout
/// (one token over group pairs, the tiles of 2-15 tokens, the gemm), so each token gets its bits alone and the
/// row layout's at every batch size. Other paths copy rows back out and give the row layout's bits. Row counts
/// that leave a lone 8-row group, row ranges split across 2 threads, passes of 8 and chunks of the gemm.
@Test(arguments: [GGMLType.q4_K, .q5_K, .q6_K])
func kQuantRows8ProductsKeepEachTokensBitsAndTheGemms(_ t: GGMLType) throws {
    let pool = try ThreadPool(threads: 2)
    let nMax = 40
    for (rows, cols) in [(40, 3 * 256), (64, 8 * 256), (8, 256)] {
        try withPackedCase(t, rows: rows, cols: cols, seed: 84 + UInt64(rows), tokens: nMax) { isa, w, p, x in
            let rowOrder = (isa == .avx2 || isa == .avxVNNI) && t == .q4_K
            let readsLayout = (isa == .avx512 && KernelISA.cpuHasVNNI) || rowOrder
            func product(_ m: WeightMatrix, first: Int, n: Int) -> [Float] { tokensProduct(m, x, first: first, n: n, pool: pool) }
            let alone = (0..<nMax).map { product(p, first: $0, n: 1) }
            for n in [1, 2, 3, 4, 7, 8, 9, 15, 16, 31, 32, 33, 40] {
                let first = nMax - n
                let packed = product(p, first: first, n: n), row = product(w, first: first, n: n)
                if readsLayout {
                    for k in 0..<n {
                        let token = Array(packed[(k * rows)..<((k + 1) * rows)])
                        #expect(token.map(\.bitPattern) == alone[first + k].map(\.bitPattern),
                                "\(t.name) \(rows)x\(cols), token \(k) of \(n): packed bits differ from the token alone")
                    }
                }
                if !readsLayout || rowOrder || n >= (t == .q6_K ? 16 : 8) { // where the row layout takes the gemm
                    #expect(packed.map(\.bitPattern) == row.map(\.bitPattern),
                            "\(t.name) [\(isa.name)] \(rows)x\(cols), \(n) tokens: packed products differ from the row layout's")
                }
            }
        }
    }
}

/// Q4_1, Q5_0 and Q5_1 packed: where the path reads the layout (AVX2, AVX-VNNI, AVX-512 without VNNI:
/// x86/avx2/rows8_q4_1_q5.c, an order of their own at every batch size) each token of an n-token call gets the
/// bits of that token alone, over the one-token group pairs, the passes of 4 tokens and chunks of 64, row ranges
/// split across 2 threads; the results lie within float rounding of the row layout's (ggml's order). Other
/// paths copy rows back out and give the row layout's bits.
@Test(arguments: [GGMLType.q4_1, .q5_0, .q5_1])
func ownOrderRows8ProductsKeepEachTokensBits(_ t: GGMLType) throws {
    let pool = try ThreadPool(threads: 2)
    let nMax = 70
    for (rows, cols) in [(40, 7 * 32), (64, 72 * 32), (8, 32)] {
        try withPackedCase(t, rows: rows, cols: cols, seed: 86 + UInt64(rows), tokens: nMax) { isa, w, p, x in
            let readsLayout = lk_rows8_preferred(Int32(t.rawValue)) != 0
            func product(_ m: WeightMatrix, first: Int, n: Int) -> [Float] { tokensProduct(m, x, first: first, n: n, pool: pool) }
            let alone = (0..<nMax).map { product(p, first: $0, n: 1) }
            for n in [1, 2, 3, 4, 5, 8, 15, 16, 17, 33, 64, 65, 70] {
                let first = nMax - n
                let packed = product(p, first: first, n: n), row = product(w, first: first, n: n)
                for k in 0..<n {
                    let token = Array(packed[(k * rows)..<((k + 1) * rows)])
                    #expect(token.map(\.bitPattern) == alone[first + k].map(\.bitPattern),
                            "\(t.name) [\(isa.name)] \(rows)x\(cols), token \(k) of \(n): packed bits differ from the token alone")
                }
                if readsLayout {
                    let far = (0..<(n * rows)).filter { abs(packed[$0] - row[$0]) > 1e-5 * (1 + abs(row[$0])) }
                    #expect(far.isEmpty, "\(t.name) [\(isa.name)] \(rows)x\(cols), \(n) tokens: \(far.count) outputs beyond rounding of the row layout's")
                } else {
                    #expect(packed.map(\.bitPattern) == row.map(\.bitPattern), "\(t.name) [\(isa.name)] \(rows)x\(cols), \(n) tokens: copied rows differ")
                }
            }
        }
    }
}

/// Packed, the llama.cpp goldens of q4_0MatmulMatchesLlamaCppRepackedKernels still hold on AVX2 and AVX-512
/// (the paths that read the layout: 16-row tiles and gemm on AVX-512 VNNI, 8-row ones on AVX2).
@Test(arguments: [KernelISA.avx2, .avx512])
func rows8MatchesLlamaCppRepackedKernels(_ isa: KernelISA) throws {
    try #require(KernelISA.avx2.isAvailable)
    guard isa.isAvailable else { return }
    let w = try #require(readBytes(kernelFixtures + "/q4_0_mm_w.bin"))
    let x = try #require(readBytes(kernelFixtures + "/q4_0_mm_x.bin"))
    let want = try #require(readFloats(kernelFixtures + "/q4_0_mm_y.f32"))
    let rows = 24, cols = 352, nTokens = 6, wRow = cols / 32 * 18, xRow = cols / 32 * 34
    let p = try #require(packedCopy(w, rows: rows, cols: cols))
    for (n, first, begin, end) in [(nTokens, 0, 0, rows), (1, 4, 0, rows), (1, 5, 8, 16), (3, 1, 8, 24), (2, 4, 0, 24), (1, 0, 0, 8)] {
        var y = [Float](repeating: .nan, count: n * rows)
        isa.withThreadSelection {
            p.withUnsafeBytes { wp in
                x.withUnsafeBytes { xp in
                    lk_matmul_tensor(Int32(LK_TYPE_Q4_0), Int32(LK_LLAMA_REPACKED) | Int32(LK_ROWS8), wp.baseAddress!, wRow, Int64(cols),
                                     xp.baseAddress! + first * xRow, xRow, Int64(n), &y, Int64(rows), Int64(begin), Int64(end))
                }
            }
        }
        for t in 0..<n {
            let bad = (begin..<end).filter { y[t * rows + $0].bitPattern != want[(first + t) * rows + $0].bitPattern }
            #expect(bad.isEmpty, "[\(isa.name)] token \(first + t) of a \(n)-token call, rows \(begin)..<\(end): rows \(bad) differ from llama.cpp")
        }
    }
}

/// PackedMatrices packs what this path prefers (whole groups of rows: Q4_0 and Q8_0 on AVX2, AVX-VNNI and AVX-512
/// with or without VNNI, Q4_1 (as Q5_0, Q5_1) on AVX2, AVX-VNNI and AVX-512 without VNNI, Q4_K, Q5_K and Q6_K on AVX-512 VNNI
/// without AMX) and nothing else.
@Test func packedMatricesPackOnlyWhatThePathPrefers() throws {
    var rng = Rng(83)
    let w16 = randomWeights(.q4_0, rows: 16, cols: 64, rng: &rng), w12 = randomWeights(.q4_0, rows: 12, cols: 64, rng: &rng)
    let q8 = randomWeights(.q8_0, rows: 16, cols: 64, rng: &rng), q6 = randomWeights(.q6_K, rows: 16, cols: 256, rng: &rng)
    let q4k = randomWeights(.q4_K, rows: 16, cols: 256, rng: &rng), q41 = randomWeights(.q4_1, rows: 16, cols: 64, rng: &rng)
    for isa in KernelISA.allCases where isa.isAvailable {
        isa.withThreadSelection {
            let store = PackedMatrices()
            w16.withUnsafeBytes { a in w12.withUnsafeBytes { b in q8.withUnsafeBytes { c in q6.withUnsafeBytes { e in q4k.withUnsafeBytes { f in
                let p16 = store.packed(try! WeightMatrix(type: .q4_0, rows: 16, cols: 64, data: a.baseAddress!))
                let p12 = store.packed(try! WeightMatrix(type: .q4_0, rows: 12, cols: 64, data: b.baseAddress!))
                let pq8 = store.packed(try! WeightMatrix(type: .q8_0, rows: 16, cols: 64, data: c.baseAddress!))
                let pq6 = store.packed(try! WeightMatrix(type: .q6_K, rows: 16, cols: 256, data: e.baseAddress!))
                let pq4k = store.packed(try! WeightMatrix(type: .q4_K, rows: 16, cols: 256, data: f.baseAddress!))
                let packs = [.avx2, .avxVNNI, .avx512, .avx512NoVNNI, .avx512AMX].contains(isa)
                let packsK = isa == .avx512 && KernelISA.cpuHasVNNI // the AMX path's K-quant tiles read rows
                let packsQ4K = packsK || [.avx2, .avxVNNI].contains(isa)
                #expect(p16.rows8 == packs && p16.rows8 == (p16.data != UnsafeRawPointer(a.baseAddress!)), "[\(isa.name)]")
                #expect(pq8.rows8 == packs && !p12.rows8 && pq6.rows8 == packsK && pq4k.rows8 == packsQ4K, "[\(isa.name)]")
                let pq41 = q41.withUnsafeBytes { store.packed(try! WeightMatrix(type: .q4_1, rows: 16, cols: 64, data: $0.baseAddress!)) }
                let packs41 = [.avx2, .avxVNNI, .avx512NoVNNI].contains(isa)
                #expect(pq41.rows8 == packs41, "[\(isa.name)] Q4_1")
                #expect(store.byteCount == (packs ? w16.count + q8.count : 0) + (packsK ? q6.count : 0) + (packsQ4K ? q4k.count : 0)
                        + (packs41 ? q41.count : 0))
            } } } } }
        }
    }
}

/// A pool's threads pack shares of a matrix's row groups: the copy is the one packing alone makes, byte for
/// byte, also when the groups do not split evenly between the shares (13 groups, 4 shares).
@Test func packingOnAPoolGivesTheSameCopy() throws {
    var rng = Rng(89)
    let pool = try ThreadPool(threads: 2)
    for type in [GGMLType.q4_0, .q4_1, .q5_0, .q5_1, .q8_0, .q4_K, .q5_K, .q6_K] {
        let cols = type.blockSize == 256 ? 512 : 128
        let w = randomWeights(type, rows: 104, cols: cols, rng: &rng)
        for isa in KernelISA.allCases where isa.isAvailable {
            isa.withThreadSelection {
                w.withUnsafeBytes { raw in
                    let m = try! WeightMatrix(type: type, rows: 104, cols: cols, data: raw.baseAddress!)
                    let alone = PackedMatrices(), shared = PackedMatrices()
                    let a = alone.packed(m), b = shared.packed(m, pool: pool)
                    #expect(a.rows8 == b.rows8, "[\(isa.name) \(type)]")
                    guard a.rows8 else { return }
                    #expect(memcmp(a.data, b.data, w.count) == 0, "[\(isa.name) \(type)]")
                    #expect(memcmp(a.data, raw.baseAddress!, w.count) != 0, "[\(isa.name) \(type)] the layout moves bytes")
                }
            }
        }
    }
}
