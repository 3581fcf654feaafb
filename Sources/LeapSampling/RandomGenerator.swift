// Seeded pseudo-random numbers for sampling: xoshiro256** (Blackman & Vigna, 2018) seeded through
// SplitMix64, so that every 64-bit seed (including 0) gives a well-mixed, non-zero state.
// The same seed always yields the same sequence on every platform (pure integer arithmetic).

package struct Xoshiro256StarStar: Sendable {
    private var s: (UInt64, UInt64, UInt64, UInt64)

    package init(seed: UInt64) {
        var x = seed
        func splitMix64(_ x: inout UInt64) -> UInt64 {
            x &+= 0x9E37_79B9_7F4A_7C15
            var z = x
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        s = (splitMix64(&x), splitMix64(&x), splitMix64(&x), splitMix64(&x))
    }

    @inline(__always) private static func rotl(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }

    package mutating func next() -> UInt64 {
        let result = Self.rotl(s.1 &* 5, 7) &* 9
        let t = s.1 << 17
        s.2 ^= s.0
        s.3 ^= s.1
        s.1 ^= s.2
        s.0 ^= s.3
        s.2 ^= t
        s.3 = Self.rotl(s.3, 45)
        return result
    }

    /// Uniform double in [0, 1) with 53 random bits.
    package mutating func nextUnitDouble() -> Double {
        Double(next() >> 11) * (1.0 / 9_007_199_254_740_992.0)
    }
}
