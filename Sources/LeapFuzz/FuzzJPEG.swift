// Fuzz target for the JPEG decoder: any bytes must give an RGB image within the size limits or a LeapError,
// never a crash, a hang or an unbounded allocation.
import LeapImage

/// Seeds: small baseline 4:2:0 JPEGs made by the encoder (colour, gray, odd sizes); pass the files of
/// Tests/Fixtures/images as extra seeds for progressive, CMYK and restart-marker inputs. Without
/// libturbojpeg the seeds are empty and every input must fail with the "library missing" error.
private func fuzzJPEGSeeds() -> [[UInt8]] {
    var seeds: [[UInt8]] = []
    for (w, h, gray) in [(16, 16, false), (13, 7, false), (9, 17, true), (1, 1, false)] {
        var px = [UInt8](repeating: 0, count: w * h * 3)
        for i in 0..<(w * h) {
            let v = UInt8(truncatingIfNeeded: i &* 37 &+ (i / w) &* 11)
            (px[3 * i], px[3 * i + 1], px[3 * i + 2]) = gray ? (v, v, v) : (v, v &+ 85, 255 &- v)
        }
        if let image = try? RGBImage(width: w, height: h, pixels: px), let jpeg = try? JPEG.encode(image, quality: 80) {
            seeds.append(jpeg)
        }
    }
    return seeds
}

let fuzzJPEG: FuzzTarget = (seeds: fuzzJPEGSeeds(), run: fuzzJPEGOne)

func fuzzJPEGOne(_ data: [UInt8]) {
    guard let image = try? JPEG.decode(data) else { return }
    if image.width > JPEG.maxSide || image.height > JPEG.maxSide || image.width * image.height > JPEG.maxPixels {
        fuzzFailure("JPEG decode returned \(image.width)x\(image.height), beyond the limits")
    }
    if image.pixels.count != image.width * image.height * 3 {
        fuzzFailure("JPEG decode returned \(image.pixels.count) bytes for \(image.width)x\(image.height)")
    }
    // Small results also go through the encoder and back (bounded work per input).
    if image.width * image.height <= 4_096 {
        guard let again = try? JPEG.decode(try JPEG.encode(image, quality: 75)) else {
            fuzzFailure("re-encoding a decoded \(image.width)x\(image.height) image failed")
        }
        if again.width != image.width || again.height != image.height {
            fuzzFailure("JPEG re-encode changed the size \(image.width)x\(image.height) to \(again.width)x\(again.height)")
        }
    }
}
