// lk_round_bf16_row (the activations of BF16 weights) against the definition of rounding to BF16: the
// nearest of the two BF16 values around x (the float with its low 16 bits cleared, and the next one up),
// ties to the even one, NaN kept a NaN, and values past BF16's largest finite one rounding to infinity.
import CLeapKernels
import Testing

private func bits(_ x: Float) -> UInt32 { x.bitPattern }

@Test func bf16RoundingIsNearestEven() {
    var rng = Rng(7)
    var xs: [Float] = (0..<4096).map { _ in rng.normal() * 10 }
    // Exact ties (low half 0x8000) with an odd and an even upper half, subnormals, signed zeros, extremes.
    xs += [Float(bitPattern: 0x3F80_8000), Float(bitPattern: 0x3F81_8000), Float(bitPattern: 0xBF80_8000),
           Float(bitPattern: 0x0000_8001), Float(bitPattern: 0x0000_7FFF), 0, -0.0, 1, -1,
           .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .infinity, -.infinity]
    var ys = [Float](repeating: 0, count: xs.count)
    lk_round_bf16_row(xs, &ys, Int64(xs.count))
    for (x, y) in zip(xs, ys) {
        #expect(bits(y) & 0xFFFF == 0, "\(x) -> \(y) is not a BF16 value")
        let down = Float(bitPattern: bits(x) & 0xFFFF_0000)
        let upBits = (bits(x) & 0xFFFF_0000) &+ 0x1_0000
        let low = bits(x) & 0xFFFF
        if low == 0 {
            #expect(bits(y) == bits(x))
        } else if low < 0x8000 {
            #expect(bits(y) == bits(down), "\(x) -> \(y)")
        } else if low > 0x8000 {
            #expect(bits(y) == upBits, "\(x) -> \(y)")
        } else {
            let even = (bits(down) >> 16) & 1 == 0 ? bits(down) : upBits
            #expect(bits(y) == even, "tie \(x) -> \(y)")
        }
    }
    #expect(ys[xs.count - 4] == .infinity && ys[xs.count - 3] == -.infinity)  // past the largest BF16
    var nan: [Float] = [.nan, Float(bitPattern: 0x7F80_0001)]  // a quiet and a signalling NaN
    lk_round_bf16_row(nan, &nan, 2)                           // in place
    #expect(nan.allSatisfy { $0.isNaN })
}
