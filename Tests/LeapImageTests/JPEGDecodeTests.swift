import Glibc
import LeapCore
import LeapImage
import LeapTestFiles
import Testing

/// Tests/Fixtures/images, found from this file's path.
let imageFixturesDir = fixturesDir("images")


func fixtureLines(_ name: String) -> [[String]] {
    guard let text = readBytes("\(imageFixturesDir)/\(name)") else { return [] }
    return String(decoding: text, as: UTF8.self).split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
}

/// Fails (never skips) when libturbojpeg is missing: scripts/setup.sh installs it, so its absence is a
/// broken environment, not a reason for the decoder tests to pass.
func requireTurboJPEG() throws {
    try #require(JPEG.libraryError == nil, "\(JPEG.libraryError ?? "") — run scripts/setup.sh")
}

struct ValidJPEG: CustomStringConvertible, Sendable {
    var name: String, width: Int, height: Int
    var description: String { name }
}

let validJPEGs: [ValidJPEG] = fixtureLines("manifest.txt").compactMap { f in
    guard f.count == 3, let w = Int(f[1]), let h = Int(f[2]) else { return nil }
    return ValidJPEG(name: f[0], width: w, height: h)
}

struct RejectedJPEG: CustomStringConvertible, Sendable {
    var name: String, kind: String, words: [String]
    var description: String { name }
}

let rejectedJPEGs: [RejectedJPEG] = fixtureLines("rejects.txt").compactMap { f in
    guard f.count >= 3 else { return nil }
    return RejectedJPEG(name: f[0], kind: f[1], words: Array(f[2...]))
}

@Suite struct JPEGDecodeTests {
    @Test func fixturesArePresent() {
        #expect(validJPEGs.count >= 13, "fixtures missing in \(imageFixturesDir)")
        #expect(rejectedJPEGs.count >= 12, "fixtures missing in \(imageFixturesDir)")
    }

    @Test func libraryIsAvailable() throws {
        try requireTurboJPEG()
    }

    /// PIL decodes with libjpeg-turbo too (same accurate integer IDCT, fancy upsampling, colour conversion
    /// and, for CMYK, the same Adobe-inverted conversion), so the pixels must be identical: tolerance 0.
    @Test(arguments: validJPEGs)
    func decodesLikePIL(_ fixture: ValidJPEG) throws {
        try requireTurboJPEG()
        let bytes = try #require(readBytes("\(imageFixturesDir)/\(fixture.name).jpg"))
        let expected = try #require(readBytes("\(imageFixturesDir)/\(fixture.name).rgb"))
        let image = try JPEG.decode(bytes)
        #expect(image.width == fixture.width)
        #expect(image.height == fixture.height)
        #expect(image.pixels.count == expected.count)
        let differing = zip(image.pixels, expected).filter { $0 != $1 }.count
        #expect(differing == 0, "\(differing) of \(expected.count) bytes differ from PIL")
    }

    @Test(arguments: rejectedJPEGs)
    func rejectsWithPreciseError(_ fixture: RejectedJPEG) throws {
        try requireTurboJPEG()
        let bytes = try #require(readBytes("\(imageFixturesDir)/\(fixture.name).jpg"))
        do {
            let image = try JPEG.decode(bytes)
            Issue.record("decoded \(fixture.name) as \(image.width)x\(image.height) instead of rejecting it")
        } catch let e as LeapError {
            let kind: LeapError.Kind = fixture.kind == "format" ? .format : .unsupported
            #expect(e.kind == kind, "\(e.message)")
            for word in fixture.words {
                #expect(e.message.contains(word), "message '\(e.message)' lacks '\(word)'")
            }
        }
    }

    @Test func rejectsEmptyInput() throws {
        try requireTurboJPEG()
        #expect(throws: LeapError.invalidArgument("the image data is empty")) { try JPEG.decode([UInt8]()) }
    }

    /// Every prefix of a valid file fails cleanly (no crash, no partial image): truncation anywhere.
    @Test func everyTruncationIsAnError() throws {
        try requireTurboJPEG()
        let bytes = try #require(readBytes("\(imageFixturesDir)/progressive_420_41x29.jpg"))
        for n in stride(from: 0, to: bytes.count - 2, by: 7) {
            #expect(throws: LeapError.self, "prefix of \(n) bytes") { try JPEG.decode(Array(bytes[0..<n])) }
        }
    }

    /// Decoding from threads at once: each call has its own TurboJPEG handle, and the library is loaded once.
    @Test func decodesConcurrently() async throws {
        try requireTurboJPEG()
        let bytes = try #require(readBytes("\(imageFixturesDir)/baseline_420_41x29.jpg"))
        let expected = try #require(readBytes("\(imageFixturesDir)/baseline_420_41x29.rgb"))
        let results = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 {
                group.addTask { (try? JPEG.decode(bytes))?.pixels == expected }
            }
            var all: [Bool] = []
            for await r in group { all.append(r) }
            return all
        }
        #expect(results == Array(repeating: true, count: 8))
    }
}
