// ImageResize: antialiased bilinear resizing of RGB8 images, bit for bit as llama.cpp mtmd does it for
// LFM2-VL (img_tool::resize_pillow with RESIZE_ALGO_BILINEAR), which is Pillow's ImagingResample with the
// triangle filter (PIL's Image.resize(size, BILINEAR)).
//
// Separable: a horizontal pass, rounded to UInt8, then a vertical pass. Each output pixel is a weighted sum
// of the input pixels under a triangle filter widened by the scale when shrinking (the antialiasing) and
// centred at (i + 0.5) * scale - 0.5; weights are normalized in Double and rounded to 22-bit fixed point.
//
// transformers resizes with torchvision instead (antialias=True on uint8 tensors), whose CPU kernel for
// uint8 uses the same filter with 16-bit weights of lower precision (and, on CPUs without AVX2, float
// arithmetic), so its pixels differ from these by one level in a small fraction of places.
import LeapImage
import LeapKernels

/// Per output position along one axis: the first input index, how many inputs, and their fixed-point
/// weights ([outSize, ksize]).
struct ResampleCoefficients {
    static let precisionBits = 22   // 32 - 8 (pixel) - 2 (headroom), as Pillow

    let ksize: Int
    var first: [Int]      // [outSize]
    var count: [Int]      // [outSize]
    var weights: [Int32]  // [outSize, ksize]

    init(inSize: Int, outSize: Int) {
        let scale = Double(inSize) / Double(outSize)
        let filterScale = max(scale, 1)   // shrinking widens the filter
        let support = 1.0 * filterScale   // the triangle's radius is 1
        ksize = Int(support.rounded(.up)) * 2 + 1
        first = Array(repeating: 0, count: outSize)
        count = Array(repeating: 0, count: outSize)
        weights = Array(repeating: 0, count: outSize * ksize)
        let inverse = 1.0 / filterScale
        let unit = Double(1 << Self.precisionBits)
        var w = [Double](repeating: 0, count: ksize)
        for o in 0..<outSize {
            let center = (Double(o) + 0.5) * scale
            let lo = max(Int(center - support + 0.5), 0)
            let n = min(Int(center + support + 0.5), inSize) - lo
            var total = 0.0
            for k in 0..<n {
                let d = abs((Double(k + lo) - center + 0.5) * inverse)
                w[k] = d < 1 ? 1 - d : 0
                total += w[k]
            }
            for k in 0..<n {
                let v = total != 0 ? w[k] / total : w[k]
                // Pillow rounds half away from zero by truncating v * 2^22 +- 0.5.
                weights[o * ksize + k] = Int32(v * unit + (v < 0 ? -0.5 : 0.5))
            }
            first[o] = lo
            count[o] = n
        }
    }
}

/// `image` resized to `width` x `height` (no-op copy when the size is unchanged); rows are split across
/// `pool`'s threads when given (the result does not depend on it).
package func resizeBilinearAntialiased(_ image: RGBImage, width: Int, height: Int, pool: ThreadPool? = nil) throws -> RGBImage {
    var pixels = image.pixels                 // [h, w, 3]
    var w = image.width
    if width != image.width {
        pixels = resampleRows(pixels, rows: image.height, inWidth: w, outWidth: width, pool: pool)
        w = width
    }
    if height != image.height {
        pixels = resampleColumns(pixels, rowLength: w * 3, inHeight: image.height, outHeight: height, pool: pool)
    }
    return try RGBImage(width: width, height: height, pixels: pixels)
}

/// `body` over `0..<count` in ranges, on `pool` when given.
private func forRanges(_ count: Int, _ pool: ThreadPool?, _ body: (Range<Int>) -> Void) {
    if let pool { pool.parallelFor(count, body) } else { body(0..<count) }
}

@inline(__always) private func fixedToPixel(_ acc: Int32) -> UInt8 {
    let v = acc >> Int32(ResampleCoefficients.precisionBits)
    return v < 0 ? 0 : v > 255 ? 255 : UInt8(v)
}

/// Horizontal pass: [rows, inWidth, 3] -> [rows, outWidth, 3].
private func resampleRows(_ src: [UInt8], rows: Int, inWidth: Int, outWidth: Int, pool: ThreadPool?) -> [UInt8] {
    let c = ResampleCoefficients(inSize: inWidth, outSize: outWidth)
    let half = Int32(1) << Int32(ResampleCoefficients.precisionBits - 1)
    return [UInt8](unsafeUninitializedCapacity: rows * outWidth * 3) { out, n in
        src.withUnsafeBufferPointer { s in
            c.weights.withUnsafeBufferPointer { kw in
                forRanges(rows, pool) { range in
                    for y in range {
                        let row = y * inWidth * 3
                        let dst = y * outWidth * 3
                        for x in 0..<outWidth {
                            var a0 = half, a1 = half, a2 = half
                            var p = row + c.first[x] * 3
                            let k = x * c.ksize
                            for i in 0..<c.count[x] {
                                let wt = kw[k + i]
                                a0 &+= Int32(s[p]) &* wt
                                a1 &+= Int32(s[p + 1]) &* wt
                                a2 &+= Int32(s[p + 2]) &* wt
                                p += 3
                            }
                            out[dst + 3 * x] = fixedToPixel(a0)
                            out[dst + 3 * x + 1] = fixedToPixel(a1)
                            out[dst + 3 * x + 2] = fixedToPixel(a2)
                        }
                    }
                }
            }
        }
        n = rows * outWidth * 3
    }
}

/// Vertical pass: [inHeight, rowLength] -> [outHeight, rowLength], accumulating whole rows.
private func resampleColumns(_ src: [UInt8], rowLength: Int, inHeight: Int, outHeight: Int, pool: ThreadPool?) -> [UInt8] {
    let c = ResampleCoefficients(inSize: inHeight, outSize: outHeight)
    let half = Int32(1) << Int32(ResampleCoefficients.precisionBits - 1)
    return [UInt8](unsafeUninitializedCapacity: outHeight * rowLength) { out, n in
        src.withUnsafeBufferPointer { s in
            forRanges(outHeight, pool) { range in
                var acc = [Int32](repeating: 0, count: rowLength)   // [rowLength], one per range
                acc.withUnsafeMutableBufferPointer { a in
                    for y in range {
                        for i in 0..<rowLength { a[i] = half }
                        for j in 0..<c.count[y] {
                            let wt = c.weights[y * c.ksize + j]
                            let row = (c.first[y] + j) * rowLength
                            for i in 0..<rowLength { a[i] &+= Int32(s[row + i]) &* wt }
                        }
                        let dst = y * rowLength
                        for i in 0..<rowLength { out[dst + i] = fixedToPixel(a[i]) }
                    }
                }
            }
        }
        n = outHeight * rowLength
    }
}
