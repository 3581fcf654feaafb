// Shared helpers for the audio encoder tests: fixtures (scripts/fixtures/make_audio_encoder_fixtures.py) and
// comparisons.
import Glibc
import LeapAudio
import LeapAudioEncoder
import LeapGGUF
import LeapKernels
import LeapTestFiles

/// Tests/Fixtures/audio_encoder
let encoderFixturesDir = fixturesDir("audio_encoder")

let tinyModel = "lfm2a-tiny-f32"
let mixedModel = "lfm2a-512-f16-q8_0"
let rawClips = ["clip_1s37", "clip_2s5", "clip_4s"]



func fixture(_ name: String) -> String { encoderFixturesDir + "/" + name }

/// A fixture clip through the engine's WAV path (decode, then resample to 16 kHz when needed).
func loadClip(_ name: String) throws -> [Float] {
    guard let bytes = readBytes(fixture(name + ".wav")) else { throw FixtureMissing(path: fixture(name + ".wav")) }
    return try loadWAV(bytes)
}

func loadEncoder(_ model: String, numerics: AudioEncoderNumerics = .llamaCpp) throws -> AudioEncoder {
    try AudioEncoder.load(file: GGUFFile(path: fixture(model + ".gguf")), numerics: numerics)
}

func golden(_ name: String) throws -> [Float] {
    guard let v = readFloats(fixture(name)) else { throw FixtureMissing(path: fixture(name)) }
    return v
}

struct FixtureMissing: Error { var path: String }

/// max |a − b| and max |b| (the scale the difference is read against).
func maxDifference(_ a: [Float], _ b: [Float]) -> (diff: Float, scale: Float) {
    var d: Float = 0, s: Float = 0
    for i in 0..<min(a.count, b.count) {
        d = max(d, abs(a[i] - b[i]))
        s = max(s, abs(b[i]))
    }
    return (d, s)
}

/// Cosine similarity of two rows (1 = same direction).
func cosine(_ a: ArraySlice<Float>, _ b: ArraySlice<Float>) -> Double {
    var ab = 0.0, aa = 0.0, bb = 0.0
    for (x, y) in zip(a, b) {
        ab += Double(x) * Double(y)
        aa += Double(x) * Double(x)
        bb += Double(y) * Double(y)
    }
    return ab / max(1e-300, (aa * bb).squareRoot())
}

func encode(_ encoder: AudioEncoder, _ samples: [Float], threads: Int = 2) throws -> [Float] {
    let pool = try ThreadPool(threads: threads)
    return try samples.withUnsafeBufferPointer { try encoder.encode(samples: $0, pool: pool) }
}
