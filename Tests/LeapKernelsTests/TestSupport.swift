// Shared helpers for the kernel tests: fixtures, deterministic random data, reference math in Float64.
import CLeapKernels
import Glibc
import LeapGGUF
import LeapKernels
import LeapTestFiles

/// Tests/Fixtures/kernels
let kernelFixtures = fixturesDir("kernels")


/// Deterministic test data (SplitMix64) as uniform, normal and byte values.
struct Rng {
    var generator: SplitMix64
    init(_ seed: UInt64) { generator = SplitMix64(seed: seed) }
    mutating func next() -> UInt64 { generator.next() }
    mutating func uniform() -> Double { Double(next() >> 11) / Double(1 << 53) }
    mutating func normal() -> Float {
        let u1 = max(uniform(), 1e-300), u2 = uniform()
        return Float((-2 * Glibc.log(u1)).squareRoot() * Glibc.cos(2 * Double.pi * u2))
    }
    mutating func byte() -> UInt8 { UInt8(truncatingIfNeeded: next()) }
}

/// Byte offsets of the f16 scale fields in one block (ggml block_* structs).
func scaleFieldOffsets(_ t: GGMLType) -> [Int] {
    switch t {
    case .q4_0, .q5_0, .q8_0: return [0]
    case .q4_1, .q5_1, .q4_K, .q5_K: return [0, 2]
    case .q2_K: return [80, 82]
    case .q3_K: return [108]
    case .q6_K: return [208]
    default: return []
    }
}

let weightTypes: [GGMLType] = [.f32, .f16, .bf16, .q4_0, .q4_1, .q5_0, .q5_1, .q8_0, .q2_K, .q3_K, .q4_K, .q5_K, .q6_K]

/// Random weight bytes of `rows` x `cols` elements of type `t`, with finite scales of realistic size.
func randomWeights(_ t: GGMLType, rows: Int, cols: Int, rng: inout Rng) -> [UInt8] {
    let n = rows * cols
    switch t {
    case .f32:
        var out = [UInt8](repeating: 0, count: n * 4)
        out.withUnsafeMutableBytes { raw in for i in 0..<n { raw.storeBytes(of: rng.normal() * 0.1, toByteOffset: i * 4, as: Float.self) } }
        return out
    case .f16, .bf16:
        var out = [UInt8](repeating: 0, count: n * 2)
        out.withUnsafeMutableBytes { raw in
            for i in 0..<n {
                let v = rng.normal() * 0.1
                let bits: UInt16 = t == .f16 ? lk_f32_to_f16(v) : UInt16(v.bitPattern >> 16)
                raw.storeBytes(of: bits, toByteOffset: i * 2, as: UInt16.self)
            }
        }
        return out
    default:
        let blocks = n / t.blockSize
        var out = (0..<blocks * t.blockBytes).map { _ in rng.byte() }
        for b in 0..<blocks {
            for off in scaleFieldOffsets(t) {
                // |scale| in [1e-4, 1e-2], either sign (mins of Q4_1 etc. may be negative)
                let mag = Float(Glibc.pow(10.0, -4 + 2 * rng.uniform()))
                let v = (rng.uniform() < 0.5 ? -1 : 1) * mag
                let h = lk_f32_to_f16(v)
                out[b * t.blockBytes + off] = UInt8(h & 0xff)
                out[b * t.blockBytes + off + 1] = UInt8(h >> 8)
            }
        }
        return out
    }
}

func randomActivations(_ n: Int, rng: inout Rng) -> [Float] {
    // heavy-ish tails like real hidden states: a few large outliers
    (0..<n).map { _ in rng.normal() * (rng.uniform() < 0.02 ? 20 : 1) }
}

func dequantizeAll(_ t: GGMLType, _ bytes: [UInt8], count n: Int) -> [Float] {
    var out = [Float](repeating: .nan, count: n)
    bytes.withUnsafeBytes { src in out.withUnsafeMutableBufferPointer { dst in
        lk_dequantize_row(Int32(t.rawValue), src.baseAddress!, dst.baseAddress!, Int64(n))
    } }
    return out
}

/// Every available non-scalar path on this machine.
var simdPaths: [KernelISA] { KernelISA.allCases.filter { $0 != .scalar && $0.isAvailable } }
