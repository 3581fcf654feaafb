import Glibc
import LeapCore
import LeapGGUF
import LeapJSON
import LeapTestFiles

/// Tests/Fixtures/speech
let speechFixtures = fixturesDir("speech")

func fixturePath(_ name: String) -> String { speechFixtures + "/" + name }

/// A little-endian float32 array written by make_speech_fixtures.py.
func fixtureFloats(_ name: String) throws -> [Float] {
    let b = try fileBytes(fixturePath(name))
    return b.withUnsafeBytes { raw in (0..<(b.count / 4)).map { Float(bitPattern: raw.loadUnaligned(fromByteOffset: 4 * $0, as: UInt32.self)) } }
}

func goldens() throws -> JSONValue {
    let b = try fileBytes(fixturePath("goldens.json"))
    return try JSONParser.parse(String(decoding: b, as: UTF8.self))
}

func maxAbsDiff(_ a: [Float], _ b: [Float]) -> Float {
    precondition(a.count == b.count, "length \(a.count) vs \(b.count)")
    var m: Float = 0
    for i in a.indices { m = max(m, abs(a[i] - b[i])) }
    return m
}

/// The error a throwing expression produced (nil if it did not throw a LeapError).
func leapError(_ body: () throws -> Void) -> LeapError? {
    do { try body() } catch let e as LeapError { return e } catch { return nil }
    return nil
}

/// A reproducible sequence of floats in [-1, 1) (64-bit LCG).
struct TestNumbers {
    var state: UInt64
    mutating func next() -> Float {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return Float(Int64(bitPattern: state) >> 40) / Float(1 << 23)
    }
}

/// vocoder-tiny.gguf's bytes with codebook `codebook`'s logit row for class 2048 multiplied by `scale` (the
/// F16 scale of each of the row's Q4_0 blocks is; the rest of the file is unchanged). The fixture for a
/// later codebook that draws the end-of-audio code.
func vocoderBytes(scalingEndCodeOf codebook: Int, by scale: Float) throws -> [UInt8] {
    var bytes = try fileBytes(fixturePath("vocoder-tiny.gguf"))
    let t = try GGUFFile(bytes: bytes).requireTensor("depth_embeddings.\(codebook).to_logits.weight")
    precondition(t.type == .q4_0 && t.rowCount == 2049 && t.rowBytes % 18 == 0)
    let row = t.fileOffset + 2048 * t.rowBytes
    for at in stride(from: row, to: row + t.rowBytes, by: 18) {
        let d = Float16(bitPattern: UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8)
        let scaled = Float16(Float(d) * scale).bitPattern
        bytes[at] = UInt8(scaled & 0xff)
        bytes[at + 1] = UInt8(scaled >> 8)
    }
    return bytes
}
