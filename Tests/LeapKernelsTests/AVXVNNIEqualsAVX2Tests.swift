// The AVX-VNNI path is the AVX2 path's kernel files built a second time, their integer products on vpdpbusd in
// place of vpmaddubsw + vpmaddwd: exact integer sums either way, so every output equals the AVX2 path's bit for
// bit, at every token count (one-token matvec, the few-token kernels, the gemms and their token chunks of 64 and
// 128) and in both weight layouts (rows, and the 8-row layout both paths pack Q4_0 and Q8_0 into).
import LeapGGUF
import LeapKernels
import Testing

@Test(arguments: [GGMLType.q4_0, .q8_0, .q4_K, .q5_K, .q6_K, .q4_1, .q5_0, .q5_1])
func avxVNNIEqualsAVX2Bitwise(_ t: GGMLType) throws {
    guard KernelISA.avxVNNI.isAvailable else { return } // this CPU has no AVX-VNNI
    let pool = try ThreadPool(threads: 2)
    let cols = t.blockSize == 32 ? 21 * 32 : 3 * 256, rows = 40
    var rng = Rng(7300 + UInt64(t.rawValue))
    let wBytes = randomWeights(t, rows: rows, cols: cols, rng: &rng)
    let maxTokens = 140
    let x = randomActivations(maxTokens * cols, rng: &rng)
    try wBytes.withUnsafeBytes { wp in
        let plain = try WeightMatrix(type: t, rows: rows, cols: cols, data: try #require(wp.baseAddress))
        func run(_ isa: KernelISA, tokens n: Int, packed: Bool) -> [Float] {
            var y = [Float](repeating: .nan, count: n * rows)
            _ = isa.withThreadSelection {
                let store = PackedMatrices() // packs as the selected path prefers
                let w = packed ? store.packed(plain) : plain
                Kernels.matmul(w, x: Array(x[0..<(n * cols)]), y: &y, nTokens: n, pool: pool)
            }
            return y
        }
        for packed in [false, true] {
            for n in [1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 33, 64, 65, 129, 140] {
                let ref = run(.avx2, tokens: n, packed: packed), got = run(.avxVNNI, tokens: n, packed: packed)
                let bad = (0..<(n * rows)).filter { got[$0].bitPattern != ref[$0].bitPattern }
                #expect(bad.isEmpty, "\(t.name) tokens=\(n) packed=\(packed): \(bad.count) outputs differ from AVX2, first y[\(bad.first ?? 0)] = \(bad.first.map { got[$0] } ?? 0) vs \(bad.first.map { ref[$0] } ?? 0)")
                #expect(!ref.contains { $0.isNaN }, "\(t.name) tokens=\(n): outputs not written")
            }
        }
    }
}
