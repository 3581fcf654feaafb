import LeapAudioEncoder
import LeapCore
import LeapGGUF
import LeapTestFiles
import Testing

/// Files that are not an lfm2a mmproj, or one whose tensors do not fit its metadata, are refused with an
/// error naming the cause. The broken variants patch the tiny fixture in memory.
@Suite struct WrongFileTests {
    func loadError(_ bytes: [UInt8]) throws -> LeapError? {
        do {
            _ = try AudioEncoder.load(file: GGUFFile(bytes: bytes))
            return nil
        } catch let e as LeapError {
            return e
        }
    }

    /// The bytes with the first occurrence of `find` replaced by `replace` (same length).
    func patched(_ bytes: [UInt8], _ find: [UInt8], _ replace: [UInt8]) throws -> [UInt8] {
        let at = try #require((0...(bytes.count - find.count)).first { i in bytes[i..<(i + find.count)].elementsEqual(find) })
        var b = bytes
        b.replaceSubrange(at..<(at + find.count), with: replace)
        return b
    }

    /// A GGUF string as stored: u64 length, bytes.
    func ggufString(_ s: String) -> [UInt8] {
        let u = Array(s.utf8)
        return withUnsafeBytes(of: UInt64(u.count).littleEndian, Array.init) + u
    }

    func le<T: FixedWidthInteger>(_ v: T) -> [UInt8] { withUnsafeBytes(of: v.littleEndian, Array.init) }

    var tiny: [UInt8] { get throws { try #require(readBytes(fixture(tinyModel + ".gguf"))) } }

    @Test func textModelIsNotAProjector() throws {
        let bytes = try #require(readBytes(encoderFixturesDir + "/../models/lfm2-tiny-f32.gguf"))
        let e = try #require(try loadError(bytes))
        #expect(e.kind == .modelLoading && e.message.contains("general.architecture is 'lfm2'"), "\(e)")
    }

    @Test func otherProjectorTypeIsUnsupported() throws {
        let key = ggufString("clip.projector_type") + le(UInt32(8))  // GGUF string type
        let bytes = try patched(tiny, key + ggufString("lfm2a"), key + ggufString("lfm2v"))
        let e = try #require(try loadError(bytes))
        #expect(e.kind == .unsupported && e.message.contains("'lfm2v'"), "\(e)")
    }

    @Test func wrongTensorShapeNamesTheTensor() throws {
        // a.blk.0.attn_q.weight: 2 dims [64, 64] → [64, 32] (the data offset stays valid)
        let info = ggufString("a.blk.0.attn_q.weight") + le(UInt32(2)) + le(UInt64(64))
        let bytes = try patched(tiny, info + le(UInt64(64)), info + le(UInt64(32)))
        let e = try #require(try loadError(bytes))
        #expect(e.kind == .modelLoading && e.message.contains("a.blk.0.attn_q.weight"), "\(e)")
    }

    @Test func missingTensorIsNamed() throws {
        let bytes = try patched(tiny, ggufString("a.blk.1.conv_pw2.weight"), ggufString("a.blk.1.conv_pw2.weighX"))
        let e = try #require(try loadError(bytes))
        #expect(e.kind == .modelLoading && e.message.contains("missing tensor 'a.blk.1.conv_pw2.weight'"), "\(e)")
    }

    @Test func moreLayersThanTensors() throws {
        let key = ggufString("clip.audio.block_count")
        let bytes = try patched(tiny, key + le(UInt32(4)) + le(UInt32(2)), key + le(UInt32(4)) + le(UInt32(3)))
        let e = try #require(try loadError(bytes))
        #expect(e.kind == .modelLoading && e.message.contains("a.blk.2."), "\(e)")
    }
}
