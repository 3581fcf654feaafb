import LeapCore
import LeapGGUF
import LeapVision
import Testing

/// A tensor-less GGUF v3 holding `kvs` (key, GGUF type, value bytes), padded to 32 bytes.
fileprivate func mmprojBytes(_ kvs: [(String, UInt32, [UInt8])]) -> [UInt8] {
    func u32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
    func u64(_ v: Int) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: UInt64(v) >> (8 * UInt64($0))) } }
    var b = Array("GGUF".utf8) + u32(3) + u64(0) + u64(kvs.count)
    for (key, type, value) in kvs { b += u64(key.utf8.count) + Array(key.utf8) + u32(type) + value }
    while b.count % 32 != 0 { b.append(0) }
    return b
}

fileprivate func floats(_ v: [Float]) -> [UInt8] {   // GGUF ARRAY (9) of FLOAT32 (6)
    var b: [UInt8] = [6, 0, 0, 0] + (0..<8).map { UInt8(truncatingIfNeeded: v.count >> (8 * $0)) }
    for x in v { b += (0..<4).map { UInt8(truncatingIfNeeded: x.bitPattern >> (8 * UInt32($0))) } }
    return b
}

fileprivate func uint32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }

@Suite struct PreprocessingParametersTests {
    @Test func defaultsAreLFM2VL() {
        let p = LFM2VLImageParameters()
        #expect(p.tileSize == 512 && p.minImageTokens == 64 && p.maxImageTokens == 256)
        #expect(p.minTiles == 2 && p.maxTiles == 10 && p.encoderPatchSize == 16 && p.downsampleFactor == 2)
        #expect(p.useThumbnail && p.maxPixelsTolerance == 2 && p.imageMean == [0.5, 0.5, 0.5] && p.imageStd == [0.5, 0.5, 0.5])
        #expect(p.tiledImageFit == .letterbox && p.alignment == 32 && p.minPixels == 65_536 && p.maxPixels == 262_144)
    }

    @Test func readsTheMmproj() throws {
        let file = try GGUFFile(bytes: mmprojBytes([
            ("clip.vision.image_mean", 9, floats([0.48, 0.45, 0.40])),
            ("clip.vision.image_std", 9, floats([0.26, 0.26, 0.27])),
            ("clip.vision.patch_size", 4, uint32(16)),
            ("clip.vision.projector.scale_factor", 4, uint32(2)),
        ]))
        let p = try LFM2VLImageParameters(mmproj: file)
        #expect(p.imageMean == [0.48, 0.45, 0.40] && p.imageStd == [0.26, 0.26, 0.27])
        #expect(p.encoderPatchSize == 16 && p.downsampleFactor == 2 && p.tileSize == 512)
    }

    /// As llama.cpp: a missing scale factor means no merge (alignment 16), missing mean/std is an error.
    @Test func mmprojDefaultsAndErrors() throws {
        let noScale = try GGUFFile(bytes: mmprojBytes([
            ("clip.vision.image_mean", 9, floats([0.5, 0.5, 0.5])),
            ("clip.vision.image_std", 9, floats([0.5, 0.5, 0.5])),
            ("clip.vision.patch_size", 4, uint32(16)),
        ]))
        #expect(try LFM2VLImageParameters(mmproj: noScale).alignment == 16)
        let noStd = try GGUFFile(bytes: mmprojBytes([
            ("clip.vision.image_mean", 9, floats([0.5, 0.5, 0.5])),
            ("clip.vision.patch_size", 4, uint32(16)),
        ]))
        #expect(throws: LeapError.modelLoading("the mmproj lacks clip.vision.image_std (3 values): needed to normalize images")) {
            try LFM2VLImageParameters(mmproj: noStd)
        }
        let zeroStd = try GGUFFile(bytes: mmprojBytes([
            ("clip.vision.image_mean", 9, floats([0.5, 0.5, 0.5])),
            ("clip.vision.image_std", 9, floats([0.5, 0, 0.5])),
            ("clip.vision.patch_size", 4, uint32(16)),
        ]))
        let e = try #require(throws: LeapError.self) { try LFM2VLImageParameters(mmproj: zeroStd) }
        #expect(e.kind == .modelLoading)
    }
}
