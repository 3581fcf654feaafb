import Glibc
import LeapCore
import LeapJSON

/// Tests/Fixtures/speech, found from this file's path.
let speechFixtures: String = {
    var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast(2)  // LeapSpeechTests/Support.swift
    return parts.joined(separator: "/") + "/Fixtures/speech"
}()

func fixturePath(_ name: String) -> String { speechFixtures + "/" + name }

func readBytes(_ path: String) throws -> [UInt8] {
    guard let f = fopen(path, "rb") else { throw LeapError.io("cannot open \(path)") }
    defer { fclose(f) }
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let n = fread(&buf, 1, buf.count, f)
        if n <= 0 { break }
        out += buf[0..<n]
    }
    return out
}

/// A little-endian float32 array written by make_speech_fixtures.py.
func readFloats(_ name: String) throws -> [Float] {
    let b = try readBytes(fixturePath(name))
    return b.withUnsafeBytes { raw in (0..<(b.count / 4)).map { Float(bitPattern: raw.loadUnaligned(fromByteOffset: 4 * $0, as: UInt32.self)) } }
}

func goldens() throws -> JSONValue {
    let b = try readBytes(fixturePath("goldens.json"))
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
