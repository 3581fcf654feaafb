// Reference dequantization of every supported ggml type: scalar, one block at a time, written straight
// from ggml's block layouts (ggml-quants.c `dequantize_row_*`). It is the portable oracle the SIMD
// kernels are tested against, and it is bit-exact with ggml and gguf-py: each output is computed with
// the same float operations in the same order (e.g. Q4_K: `(d·sc)·q − (dmin·m)`), with no FMA contraction.

/// Dequantizes `count` elements of `type` at `src` into `dst`.
/// `count` must be a multiple of `type.blockSize` (callers validate shapes; a partial trailing block is
/// left untouched).
package func dequantize(type: GGMLType, src: UnsafeRawPointer, count: Int, into dst: UnsafeMutablePointer<Float>) {
    let blocks = count / type.blockSize
    let qk = type.blockSize
    let step = type.blockBytes
    for b in 0..<blocks {
        let x = src + b * step
        let y = dst + b * qk
        switch type {
        case .f32: y[0] = Float(bitPattern: u32(x, 0))
        case .f16: y[0] = f16(x, 0)
        case .bf16: y[0] = Float(bitPattern: UInt32(u16(x, 0)) << 16)
        case .q4_0: dequantizeQ4_0(x, y)
        case .q4_1: dequantizeQ4_1(x, y)
        case .q5_0: dequantizeQ5_0(x, y)
        case .q5_1: dequantizeQ5_1(x, y)
        case .q8_0: dequantizeQ8_0(x, y)
        case .q8_1: dequantizeQ8_1(x, y)
        case .q2_K: dequantizeQ2_K(x, y)
        case .q3_K: dequantizeQ3_K(x, y)
        case .q4_K: dequantizeQ4_K(x, y)
        case .q5_K: dequantizeQ5_K(x, y)
        case .q6_K: dequantizeQ6_K(x, y)
        case .q8_K: dequantizeQ8_K(x, y)
        }
    }
}

// MARK: - Byte access (little-endian, unaligned)

@inline(__always) private func u8(_ p: UnsafeRawPointer, _ i: Int) -> UInt8 { p.load(fromByteOffset: i, as: UInt8.self) }
@inline(__always) private func i8(_ p: UnsafeRawPointer, _ i: Int) -> Int8 { p.load(fromByteOffset: i, as: Int8.self) }
@inline(__always) private func u16(_ p: UnsafeRawPointer, _ i: Int) -> UInt16 {
    UInt16(littleEndian: p.loadUnaligned(fromByteOffset: i, as: UInt16.self))
}
@inline(__always) private func u32(_ p: UnsafeRawPointer, _ i: Int) -> UInt32 {
    UInt32(littleEndian: p.loadUnaligned(fromByteOffset: i, as: UInt32.self))
}
/// IEEE binary16 → Float (exact).
@inline(__always) func f16(_ p: UnsafeRawPointer, _ i: Int) -> Float { halfToFloat(u16(p, i)) }

/// IEEE binary16 bits → Float, exact for every input (subnormals, infinities, NaN payloads).
package func halfToFloat(_ h: UInt16) -> Float {
    let sign = UInt32(h & 0x8000) << 16
    let exp = Int(h >> 10) & 0x1F
    let mant = UInt32(h & 0x3FF)
    switch exp {
    case 0:
        // Zero or subnormal: mant · 2^-24, exact in Float.
        let v = Float(mant) * Float(bitPattern: 0x3380_0000)  // 2^-24
        return Float(bitPattern: sign | v.bitPattern)
    case 31:
        return Float(bitPattern: sign | 0x7F80_0000 | (mant << 13))
    default:
        return Float(bitPattern: sign | UInt32(exp - 15 + 127) << 23 | (mant << 13))
    }
}

// MARK: - 32-element blocks

/// Q4_0: d, qs[16]. Low nibbles are elements 0..15, high nibbles 16..31.
private func dequantizeQ4_0(_ x: UnsafeRawPointer, _ y: UnsafeMutablePointer<Float>) {
    let d = f16(x, 0)
    for j in 0..<16 {
        let q = u8(x, 2 + j)
        y[j] = d * Float(Int(q & 0x0F) - 8)
        y[j + 16] = d * Float(Int(q >> 4) - 8)
    }
}

/// Q4_1: d, m, qs[16]; y = d·q + m.
private func dequantizeQ4_1(_ x: UnsafeRawPointer, _ y: UnsafeMutablePointer<Float>) {
    let d = f16(x, 0), m = f16(x, 2)
    for j in 0..<16 {
        let q = u8(x, 4 + j)
        y[j] = d * Float(q & 0x0F) + m
        y[j + 16] = d * Float(q >> 4) + m
    }
}

/// Q5_0: d, qh (u32, bit j = 5th bit of element j), qs[16].
private func dequantizeQ5_0(_ x: UnsafeRawPointer, _ y: UnsafeMutablePointer<Float>) {
    let d = f16(x, 0)
    let qh = u32(x, 2)
    for j in 0..<16 {
        let q = u8(x, 6 + j)
        let h0 = Int((qh >> UInt32(j)) & 1) << 4
        let h1 = Int((qh >> UInt32(j + 16)) & 1) << 4
        y[j] = d * Float((Int(q & 0x0F) | h0) - 16)
        y[j + 16] = d * Float((Int(q >> 4) | h1) - 16)
    }
}

/// Q5_1: d, m, qh, qs[16]; y = d·q + m.
private func dequantizeQ5_1(_ x: UnsafeRawPointer, _ y: UnsafeMutablePointer<Float>) {
    let d = f16(x, 0), m = f16(x, 2)
    let qh = u32(x, 4)
    for j in 0..<16 {
        let q = u8(x, 8 + j)
        let h0 = Int((qh >> UInt32(j)) & 1) << 4
        let h1 = Int((qh >> UInt32(j + 16)) & 1) << 4
        y[j] = d * Float(Int(q & 0x0F) | h0) + m
        y[j + 16] = d * Float(Int(q >> 4) | h1) + m
    }
}

/// Q8_0: d, qs[32] int8.
private func dequantizeQ8_0(_ x: UnsafeRawPointer, _ y: UnsafeMutablePointer<Float>) {
    let d = f16(x, 0)
    for j in 0..<32 { y[j] = d * Float(i8(x, 2 + j)) }
}

/// Q8_1: d, s (= d·Σq, unused here), qs[32] int8.
private func dequantizeQ8_1(_ x: UnsafeRawPointer, _ y: UnsafeMutablePointer<Float>) {
    let d = f16(x, 0)
    for j in 0..<32 { y[j] = d * Float(i8(x, 4 + j)) }
}

// MARK: - 256-element super-blocks (K-quants)

/// Q2_K: scales[16] (low nibble scale, high nibble min), qs[64] (2 bits), d, dmin.
private func dequantizeQ2_K(_ x: UnsafeRawPointer, _ y: UnsafeMutablePointer<Float>) {
    let d = f16(x, 80), dmin = f16(x, 82)
    var out = 0, scaleIndex = 0
    for half in 0..<2 {
        let qs = 16 + 32 * half
        for shift in stride(from: 0, to: 8, by: 2) {
            for group in 0..<2 {
                let sc = u8(x, scaleIndex)
                scaleIndex += 1
                let dl = d * Float(sc & 0x0F)
                let ml = dmin * Float(sc >> 4)
                for k in 0..<16 {
                    let q = (u8(x, qs + 16 * group + k) >> UInt8(shift)) & 3
                    y[out] = dl * Float(q) - ml
                    out += 1
                }
            }
        }
    }
}

/// Q3_K: hmask[32] (3rd bit, inverted), qs[64] (low 2 bits), scales[12] (16 packed 6-bit), d.
private func dequantizeQ3_K(_ x: UnsafeRawPointer, _ y: UnsafeMutablePointer<Float>) {
    let d = f16(x, 108)
    // Scale j: low 4 bits from scales[j % 8] (nibble j / 8), high 2 bits from scales[8 + j % 4] (pair j / 4).
    var scales = [Int](repeating: 0, count: 16)
    for j in 0..<16 {
        let low = Int(u8(x, 96 + j % 8) >> UInt8(4 * (j / 8))) & 0x0F
        let high = Int(u8(x, 96 + 8 + j % 4) >> UInt8(2 * (j / 4))) & 0x03
        scales[j] = (low | high << 4) - 32
    }
    var out = 0, scaleIndex = 0
    var mask: UInt8 = 1
    for half in 0..<2 {
        let qs = 32 + 32 * half
        for shift in stride(from: 0, to: 8, by: 2) {
            for group in 0..<2 {
                let dl = d * Float(scales[scaleIndex])
                scaleIndex += 1
                for k in 0..<16 {
                    let l = 16 * group + k
                    let low = Int((u8(x, qs + l) >> UInt8(shift)) & 3)
                    let q = low - (u8(x, l) & mask != 0 ? 0 : 4)
                    y[out] = dl * Float(q)
                    out += 1
                }
            }
            mask <<= 1
        }
    }
}

/// Scale and min of sub-block `j` (0..7) from the 12 packed bytes at `s` (Q4_K / Q5_K).
@inline(__always) private func scaleMinK4(_ j: Int, _ x: UnsafeRawPointer, _ s: Int) -> (Float, Float) {
    if j < 4 {
        return (Float(u8(x, s + j) & 63), Float(u8(x, s + j + 4) & 63))
    }
    let sc = (u8(x, s + j + 4) & 0x0F) | ((u8(x, s + j - 4) >> 6) << 4)
    let m = (u8(x, s + j + 4) >> 4) | ((u8(x, s + j) >> 6) << 4)
    return (Float(sc), Float(m))
}

/// Q4_K: d, dmin, scales[12], qs[128]. Chunk c (64 outputs) uses qs[32c..<32c+32]: low nibbles then high.
private func dequantizeQ4_K(_ x: UnsafeRawPointer, _ y: UnsafeMutablePointer<Float>) {
    let d = f16(x, 0), dmin = f16(x, 2)
    for c in 0..<4 {
        let (sc1, m1) = scaleMinK4(2 * c, x, 4)
        let (sc2, m2) = scaleMinK4(2 * c + 1, x, 4)
        let d1 = d * sc1, min1 = dmin * m1
        let d2 = d * sc2, min2 = dmin * m2
        for k in 0..<32 {
            let q = u8(x, 16 + 32 * c + k)
            y[64 * c + k] = d1 * Float(q & 0x0F) - min1
            y[64 * c + 32 + k] = d2 * Float(q >> 4) - min2
        }
    }
}

/// Q5_K: d, dmin, scales[12], qh[32], qs[128]. Sub-block i takes its 5th bit from bit i of qh[k].
private func dequantizeQ5_K(_ x: UnsafeRawPointer, _ y: UnsafeMutablePointer<Float>) {
    let d = f16(x, 0), dmin = f16(x, 2)
    for c in 0..<4 {
        let (sc1, m1) = scaleMinK4(2 * c, x, 4)
        let (sc2, m2) = scaleMinK4(2 * c + 1, x, 4)
        let d1 = d * sc1, min1 = dmin * m1
        let d2 = d * sc2, min2 = dmin * m2
        for k in 0..<32 {
            let q = u8(x, 48 + 32 * c + k)
            let h = u8(x, 16 + k)
            let q1 = Int(q & 0x0F) + ((h >> UInt8(2 * c)) & 1 != 0 ? 16 : 0)
            let q2 = Int(q >> 4) + ((h >> UInt8(2 * c + 1)) & 1 != 0 ? 16 : 0)
            y[64 * c + k] = d1 * Float(q1) - min1
            y[64 * c + 32 + k] = d2 * Float(q2) - min2
        }
    }
}

/// Q6_K: ql[128] (low 4 bits), qh[64] (high 2 bits), scales[16] int8, d. y = (d·sc)·q, q in −32..31.
private func dequantizeQ6_K(_ x: UnsafeRawPointer, _ y: UnsafeMutablePointer<Float>) {
    let d = f16(x, 208)
    for half in 0..<2 {
        let ql = 64 * half, qh = 128 + 32 * half, sc = 192 + 8 * half
        let out = y + 128 * half
        for k in 0..<32 {
            let s = k / 16
            let h = u8(x, qh + k)
            let lo0 = u8(x, ql + k), lo1 = u8(x, ql + k + 32)
            let q1 = Int((lo0 & 0x0F) | ((h >> 0) & 3) << 4) - 32
            let q2 = Int((lo1 & 0x0F) | ((h >> 2) & 3) << 4) - 32
            let q3 = Int((lo0 >> 4) | ((h >> 4) & 3) << 4) - 32
            let q4 = Int((lo1 >> 4) | ((h >> 6) & 3) << 4) - 32
            out[k] = d * Float(i8(x, sc + s)) * Float(q1)
            out[k + 32] = d * Float(i8(x, sc + s + 2)) * Float(q2)
            out[k + 64] = d * Float(i8(x, sc + s + 4)) * Float(q3)
            out[k + 96] = d * Float(i8(x, sc + s + 6)) * Float(q4)
        }
    }
}

/// Q8_K: d (f32), qs[256] int8, bsums[16] (unused here).
private func dequantizeQ8_K(_ x: UnsafeRawPointer, _ y: UnsafeMutablePointer<Float>) {
    let d = Float(bitPattern: u32(x, 0))
    for j in 0..<256 { y[j] = d * Float(i8(x, 4 + j)) }
}
