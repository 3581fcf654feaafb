// Files and inputs the encoder must refuse, each with an error that names the cause.
import LeapCore
import LeapGGUF
import LeapKernels
import LeapVision
import Testing

/// The LeapError `body` threw (nil when it threw nothing or something else).
func leapError(_ body: () throws -> Void) -> LeapError? {
    do { try body() } catch let e as LeapError { return e } catch { return nil }
    return nil
}

/// The F32 mmproj with its bytes edited in place (same lengths, so the GGUF stays valid).
struct EditedMmproj {
    var bytes: [UInt8]

    init() throws { bytes = try #require(fixtureBytes("lfm2vl-tiny-mmproj-f32.gguf")) }
    init(bytes: [UInt8]) { self.bytes = bytes }

    /// Offset just past the one length-prefixed occurrence of `s` (a key or tensor name).
    func end(of s: String) throws -> Int {
        let needle = withUnsafeBytes(of: UInt64(s.utf8.count).littleEndian, Array.init) + Array(s.utf8)
        let hits = (0...(bytes.count - needle.count)).filter { i in
            bytes[i] == needle[0] && Array(bytes[i..<i + needle.count]) == needle
        }
        try #require(hits.count == 1, "'\(s)' occurs \(hits.count) times")
        return hits[0] + needle.count
    }

    mutating func rename(_ s: String, to t: String) throws {
        precondition(s.utf8.count == t.utf8.count)
        let e = try end(of: s)
        bytes.replaceSubrange(e - s.utf8.count..<e, with: Array(t.utf8))
    }

    /// Swaps ne[0] and ne[1] of a 2-D tensor (same element count and size).
    mutating func transpose(_ tensor: String) throws {
        let e = try end(of: tensor) + 4  // past n_dims
        let ne0 = Array(bytes[e..<e + 8]), ne1 = Array(bytes[e + 8..<e + 16])
        bytes.replaceSubrange(e..<e + 16, with: ne1 + ne0)
    }

    func load() throws -> VisionEncoder { try VisionEncoder.load(file: GGUFFile(bytes: bytes)) }
}

@Suite struct EncoderRejectionTests {
    @Test func rejectsATextModel() throws {
        let e = leapError { _ = try VisionEncoder.load(path: visionFixtures + "/lfm2vl-tiny-text-f32.gguf") }
        #expect(e?.kind == .modelLoading)
        #expect(e?.message.contains("not a vision projector") == true)
        #expect(e?.message.contains("'lfm2'") == true, "names the architecture found: \(e?.message ?? "")")
    }

    @Test func rejectsAnAudioProjector() throws {
        let e = leapError { _ = try VisionEncoder.load(path: visionFixtures + "/lfm2a-mmproj-metadata.gguf") }
        #expect(e?.kind == .modelLoading)
        #expect(e?.message.contains("audio encoder") == true)
        #expect(e?.message.contains("lfm2a") == true, "\(e?.message ?? "")")
    }

    @Test func rejectsAnotherProjectorType() throws {
        var f = try EditedMmproj()
        let e0 = try f.end(of: "clip.projector_type") + 4 + 8  // past the value's type and length
        f.bytes.replaceSubrange(e0..<e0 + 4, with: Array("ldp2".utf8))
        let e = leapError { _ = try f.load() }
        #expect(e?.kind == .unsupported)
        #expect(e?.message.contains("'ldp2'") == true, "\(e?.message ?? "")")
    }

    @Test func rejectsAMissingTensor() throws {
        var f = try EditedMmproj()
        try f.rename("v.blk.1.attn_k.bias", to: "v.blk.1.attn_k.bia_")
        let e = leapError { _ = try f.load() }
        #expect(e?.kind == .modelLoading)
        #expect(e?.message.contains("missing tensor 'v.blk.1.attn_k.bias'") == true, "\(e?.message ?? "")")
    }

    @Test func rejectsAWrongShape() throws {
        var f = try EditedMmproj()
        try f.transpose("v.blk.2.ffn_up.weight")
        let e = leapError { _ = try f.load() }
        #expect(e?.kind == .modelLoading)
        #expect(e?.message.contains("'v.blk.2.ffn_up.weight' has shape [128, 64], expected [64, 128]") == true,
                "\(e?.message ?? "")")
    }

    @Test func rejectsAWrongPatchKernel() throws {
        var f = try EditedMmproj()
        try f.rename("v.patch_embd.weight", to: "v.patch_embd.weigh_")
        #expect(leapError { _ = try f.load() }?.message.contains("missing tensor 'v.patch_embd.weight'") == true)
    }

    @Test func acceptsTheUneditedFile() throws {
        let f = try EditedMmproj()
        let enc = try f.load()
        #expect(enc.outputDim == 64)
        #expect(enc.hiddenSize == 64)
        #expect(enc.layerCount == 3)
        #expect(enc.patchSize == 16)
        #expect(enc.downsampleFactor == 2)
        #expect(enc.projectorHiddenSize == 64)
        #expect(enc.positionGridSize == 16)
        #expect(enc.imageMean == [0.5, 0.5, 0.5] && enc.imageStd == [0.5, 0.5, 0.5])
        #expect(enc.config.layerNormEps == 1e-6)
        #expect(enc.numerics == .llamaCpp)
    }

    @Test func rejectsBadTiles() throws {
        let pool = try makePool()
        let enc = try VisionEncoder.load(file: mmproj("f32"))
        let bad: [PreprocessedImage.Tile] = [
            .init(width: 48, height: 64, pixels: [Float](repeating: 0, count: 48 * 64 * 3)),   // not a multiple of 32
            .init(width: 64, height: 64, pixels: [Float](repeating: 0, count: 10)),            // wrong pixel count
            .init(width: 0, height: 64, pixels: []),
            .init(width: 32 * 65, height: 32, pixels: []),                                     // > 4096 patches
        ]
        for t in bad {
            let e = leapError { _ = try enc.encode(tile: t, pool: pool) }
            #expect(e?.kind == .invalidArgument, "\(t.width)x\(t.height): \(e?.message ?? "no error")")
        }
        #expect(leapError { _ = try enc.encode(PreprocessedImage(tiles: [], grid: nil), pool: pool) }?.kind == .invalidArgument)
        let e = leapError { _ = try enc.encode(PreprocessedImage(tiles: [testTile(height: 64, width: 64, seed: 0), bad[1]], grid: nil), pool: pool) }
        #expect(e?.message.contains("tile 1") == true, "names the tile: \(e?.message ?? "")")
    }
}
