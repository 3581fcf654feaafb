// Shared helpers of the encoder tests: the fixtures of scripts/fixtures/make_vision_fixtures.py, the
// generated test images, and comparisons.
import Glibc
import LeapGGUF
import LeapKernels
import LeapTestFiles
import LeapVision

/// Tests/Fixtures/vision
let visionFixtures = fixturesDir("vision")

func fixtureBytes(_ name: String) -> [UInt8]? { readBytes(visionFixtures + "/" + name) }

/// A little-endian float32 fixture.
func fixtureFloats(_ name: String) -> [Float]? {
    guard let b = fixtureBytes(name) else { return nil }
    return b.withUnsafeBytes { raw in (0..<b.count / 4).map { raw.loadUnaligned(fromByteOffset: $0 * 4, as: Float.self) } }
}

func mmproj(_ type: String) throws -> GGUFFile { try GGUFFile(path: "\(visionFixtures)/lfm2vl-tiny-mmproj-\(type).gguf") }

/// The RGB8 test pattern of make_vision_fixtures.py: (37x + 91y + 53c + 29(x xor y) + 17·seed) mod 256.
func testImageRGB8(height: Int, width: Int, seed: Int) -> [UInt8] {
    var px = [UInt8](repeating: 0, count: height * width * 3)
    for y in 0..<height {
        for x in 0..<width {
            for c in 0..<3 { px[(y * width + x) * 3 + c] = UInt8((37 * x + 91 * y + 53 * c + 29 * (x ^ y) + 17 * seed) % 256) }
        }
    }
    return px
}

/// A tile of the test pattern, normalized as llama.cpp does: (v / 255 − mean) / std in float.
func testTile(height: Int, width: Int, seed: Int, mean: [Float] = [0.5, 0.5, 0.5], std: [Float] = [0.5, 0.5, 0.5])
    -> PreprocessedImage.Tile
{
    let rgb = testImageRGB8(height: height, width: width, seed: seed)
    let px = rgb.indices.map { (Float(rgb[$0]) / 255 - mean[$0 % 3]) / std[$0 % 3] }
    return PreprocessedImage.Tile(width: width, height: height, pixels: px)
}

/// The tiles of the fixtures: (height, width, seed).
let fixtureTiles: [(height: Int, width: Int, seed: Int)] = [(256, 256, 1), (384, 256, 2), (256, 384, 3), (512, 512, 4), (320, 448, 5)]

func maxAbsDiff(_ a: [Float], _ b: [Float]) -> Float {
    guard a.count == b.count else { return .infinity }
    var m: Float = 0
    for i in a.indices { m = max(m, abs(a[i] - b[i])) }
    return m.isNaN ? .infinity : m
}

func maxAbs(_ a: [Float]) -> Float { a.reduce(0) { max($0, abs($1)) } }

/// A pool of 2 threads for one test (tests run in parallel; a pool serves one call at a time).
func makePool() throws -> ThreadPool { try ThreadPool(threads: 2) }
