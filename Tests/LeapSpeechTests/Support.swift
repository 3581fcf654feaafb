import Glibc
import LeapCore
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
