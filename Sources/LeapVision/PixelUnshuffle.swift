// PixelUnshuffle: LFM2-VL merges each f x f block of patches (f = downsample factor, 2) into one token of
// f²·C channels before the projector, in transformers' pixel_unshuffle order (llama.cpp's
// build_patch_merge_permute gives the same).
package enum PixelUnshuffle {
    /// Token (r, c) of the (height/f) x (width/f) result (row-major) is the block of patches at rows
    /// f·r ..< f·r + f and columns f·c ..< f·c + f; the block's patch (i, j) fills channels
    /// (i·f + j)·C ..< (i·f + j + 1)·C. height and width must be multiples of f.
    package static func apply(
        _ x: UnsafePointer<Float>, // [height, width, channels]
        height: Int, width: Int, channels: Int, factor f: Int,
        into y: UnsafeMutablePointer<Float> // [(height/f)·(width/f), f·f·channels]
    ) {
        let rows = height / f, cols = width / f
        for r in 0..<rows {
            for c in 0..<cols {
                let token = y + (r * cols + c) * f * f * channels
                for i in 0..<f {
                    for j in 0..<f {
                        let patch = x + ((r * f + i) * width + c * f + j) * channels
                        (token + (i * f + j) * channels).update(from: patch, count: channels)
                    }
                }
            }
        }
    }
}
