import Glibc
import LeapImage
import LeapTestFiles

/// Fixture access and the synthetic image shared by the pre-processing tests.
enum PreprocessingFixtures {
/// Tests/Fixtures/vision_preprocessing
static let dir = fixturesDir("vision_preprocessing")

static func read(_ name: String) -> [UInt8]? { readBytes("\(dir)/\(name)") }

static func lines(_ name: String) -> [[Substring]] {
    guard let text = read(name) else { return [] }
    return String(decoding: text, as: UTF8.self).split(separator: "\n").map { $0.split(separator: " ") }
}

/// The synthetic test image of make_lfm2vl_preprocess_goldens.py (same integer formula): gradients in R and
/// G, an 8-pixel checkerboard in B, plus hashed noise 0...63 in every channel.
static func syntheticImage(width w: Int, height h: Int) throws -> RGBImage {
    var px = [UInt8](repeating: 0, count: w * h * 3)
    for y in 0..<h {
        for x in 0..<w {
            for c in 0..<3 {
                var v = (UInt32(truncatingIfNeeded: x) &* 73_856_093) ^ (UInt32(truncatingIfNeeded: y) &* 19_349_663)
                    ^ (UInt32(c) &* 83_492_791)
                v ^= v >> 13
                v = v &* 0x5BD1_E995
                v ^= v >> 15
                let noise = Int(v & 63)
                let base: Int
                switch c {
                case 0: base = x * 191 / max(w - 1, 1)
                case 1: base = y * 191 / max(h - 1, 1)
                default: base = ((x / 8 + y / 8) % 2) * 160 + 16
                }
                px[(y * w + x) * 3 + c] = UInt8(base + noise)
            }
        }
    }
    return try RGBImage(width: w, height: h, pixels: px)
}

static func fnv1a64(_ bytes: [UInt8]) -> UInt64 {
    var h: UInt64 = 0xCBF2_9CE4_8422_2325
    for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01B3 }
    return h
}
}
