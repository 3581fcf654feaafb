// JPEG: decoding to RGB8 and encoding from RGB8 through libturbojpeg (loaded at first use, see
// TurboJPEGLibrary), with every failure a precise LeapError.
import LeapCore

package enum JPEG {
    /// Largest accepted side, in pixels. JPEG itself allows 65535; 16384 covers every camera and screenshot
    /// in practice and keeps a single row allocation small.
    package static let maxSide = 16_384
    /// Largest accepted image, in pixels (64 Mi = 8192 x 8192). The decoded RGB8 image then takes at most
    /// 192 MiB (256 MiB while a CMYK file is converted), and libjpeg's own buffers for progressive files (the whole image's DCT coefficients, 2 bytes
    /// per sample) at most 384 MiB more; larger photos (64+ Mpx sensors) are rejected rather than risking an
    /// allocation the device cannot make. The vision pre-processing reduces any image to at most 10 tiles of
    /// 512 x 512 anyway.
    package static let maxPixels = 1 << 26

    /// nil when JPEG decoding and encoding are available, else why not (libturbojpeg missing, with what to
    /// install).
    package static var libraryError: String? {
        switch TurboJPEGLibrary.shared {
        case .success: return nil
        case .failure(let e): return e.message
        }
    }

    /// Decodes a baseline or progressive JPEG (grayscale, YCbCr, RGB, CMYK or YCCK) to 8-bit RGB.
    ///
    /// Pixels equal PIL's `Image.open(f).convert("RGB")` (both use libjpeg-turbo with its default accurate
    /// integer IDCT and fancy upsampling). Grayscale is replicated to R = G = B. CMYK and YCCK are decoded to
    /// CMYK and converted the way PIL does: the samples are taken as Adobe-inverted (as Photoshop writes
    /// them, and PIL assumes), then R = (255 - K) - (255 - K) * C / 255 with PIL's rounding.
    /// EXIF orientation is ignored, as in the references (transformers' processor and llama.cpp's mtmd
    /// decode without applying it); no colour management (ICC profiles are ignored).
    /// llama.cpp's tools decode files with stb_image instead, whose IDCT and chroma upsampling differ from
    /// libjpeg-turbo's by up to 3 levels in a few percent of the values (and, for odd-width 4:2:2 files, in
    /// the whole last column): comparisons with mtmd should hand it the RGB pixels decoded here.
    ///
    /// Throws: `.invalidArgument` for empty input; `.unsupported` when the bytes are another format (named),
    /// when the image exceeds `maxSide` / `maxPixels`, or when libturbojpeg is missing; `.format` for
    /// corrupt or truncated data (libjpeg's warnings, such as "premature end of data", count as errors).
    package static func decode(_ bytes: UnsafeRawBufferPointer) throws -> RGBImage {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count > 0 else {
            throw LeapError.invalidArgument("the image data is empty")
        }
        let signature = ImageSignature.of(bytes)
        guard signature == .jpeg else {
            if signature == .unknown {
                let head = bytes.prefix(4).map { hex($0) }.joined(separator: " ")
                throw LeapError.unsupported("the image data is not a JPEG (it starts with \(head), not FF D8 FF)")
            }
            throw LeapError.unsupported("the image is \(signature.rawValue), not JPEG; only JPEG images can be decoded")
        }
        let tj = try library()
        guard let handle = tj.initDecompress() else {
            throw LeapError(.outOfMemory, "TurboJPEG could not create a decompressor: \(tj.errorMessage(nil))")
        }
        defer { _ = tj.destroy(handle) }

        var w: Int32 = 0, h: Int32 = 0, subsampling: Int32 = 0, colorspace: Int32 = 0
        guard tj.decompressHeader3(handle, base, UInt(bytes.count), &w, &h, &subsampling, &colorspace) == 0 else {
            throw LeapError.format("the JPEG header is corrupt or truncated: \(tj.errorMessage(handle))")
        }
        let width = Int(w), height = Int(h)
        guard width > 0, height > 0 else {
            throw LeapError.format("the JPEG header declares an empty image (\(width)x\(height))")
        }
        guard width <= maxSide, height <= maxSide, width * height <= maxPixels else {
            throw LeapError.unsupported(
                "the JPEG image is \(width)x\(height) pixels; at most \(maxSide) pixels a side and "
                    + "\(maxPixels / (1 << 20)) Mi pixels in total are supported")
        }
        let isCMYK = colorspace == TurboJPEGLibrary.colorspaceCMYK || colorspace == TurboJPEGLibrary.colorspaceYCCK
        let channels = isCMYK ? 4 : 3
        let format = isCMYK ? TurboJPEGLibrary.pixelFormatCMYK : TurboJPEGLibrary.pixelFormatRGB
        let flags = TurboJPEGLibrary.flagStopOnWarning | TurboJPEGLibrary.flagLimitScans

        var message: String?
        // Not zero-filled first: the decoder writes every byte, and an image whose data ends early fails
        // before most of a large (lying) header's buffer is touched.
        let decoded = [UInt8](unsafeUninitializedCapacity: width * height * channels) { out, count in
            count = 0
            if tj.decompress2(handle, base, UInt(bytes.count), out.baseAddress, w, 0, h, format, flags) != 0 {
                let kind = tj.getErrorCode(handle) == TurboJPEGLibrary.errorWarning ? "corrupt or truncated" : "invalid"
                message = "the JPEG data is \(kind): \(tj.errorMessage(handle))"
                return
            }
            count = width * height * channels
        }
        if let message { throw LeapError.format(message) }
        return try RGBImage(width: width, height: height, pixels: isCMYK ? rgbFromAdobeCMYK(decoded) : decoded)
    }

    package static func decode(_ bytes: [UInt8]) throws -> RGBImage {
        try bytes.withUnsafeBytes { try decode($0) }
    }

    /// Encodes RGB8 as a baseline JPEG with 4:2:0 chroma subsampling at `quality` (1...100, libjpeg's scale),
    /// with libjpeg's accurate integer DCT: the coefficients PIL's `save(f, "JPEG", quality=q)` writes.
    package static func encode(_ image: RGBImage, quality: Int) throws -> [UInt8] {
        let tj = try library()
        guard (1...100).contains(quality) else {
            throw LeapError.invalidArgument("JPEG quality \(quality) is outside 1...100")
        }
        guard image.width <= 65_500, image.height <= 65_500 else {
            throw LeapError.unsupported("a JPEG can be at most 65500 pixels a side; the image is \(image.width)x\(image.height)")
        }
        let w = Int32(image.width), h = Int32(image.height)
        let capacity = tj.bufSize(w, h, TurboJPEGLibrary.subsampling420)
        guard capacity != UInt.max, capacity <= UInt(Int.max) else {
            throw LeapError.unsupported("TurboJPEG cannot size a JPEG buffer for \(image.width)x\(image.height)")
        }
        guard let handle = tj.initCompress() else {
            throw LeapError(.outOfMemory, "TurboJPEG could not create a compressor: \(tj.errorMessage(nil))")
        }
        defer { _ = tj.destroy(handle) }
        var message: String?
        // tjBufSize is TurboJPEG's worst case, so with NOREALLOC it writes into this buffer and never frees it.
        let out = [UInt8](unsafeUninitializedCapacity: Int(capacity)) { buf, count in
            count = 0
            var dst: UnsafeMutablePointer<UInt8>? = buf.baseAddress
            var size = capacity
            let status = image.pixels.withUnsafeBufferPointer { src in
                tj.compress2(handle, src.baseAddress, w, 0, h, TurboJPEGLibrary.pixelFormatRGB, &dst, &size,
                             TurboJPEGLibrary.subsampling420, Int32(quality),
                             TurboJPEGLibrary.flagNoRealloc | TurboJPEGLibrary.flagAccurateDCT)
            }
            guard status == 0, dst == buf.baseAddress, size <= capacity else {
                message = "JPEG encoding failed: \(tj.errorMessage(handle))"
                return
            }
            count = Int(size)
        }
        if let message { throw LeapError(.internal, message) }
        return out
    }

    private static func library() throws -> TurboJPEGLibrary {
        try TurboJPEGLibrary.shared.get()
    }

    private static func hex(_ v: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(v >> 4)], digits[Int(v & 15)]])
    }
}

/// RGB from libjpeg's CMYK output, as PIL converts it: the samples are Adobe-inverted (c' = 255 - C), and
/// PIL's cmyk2rgb computes R = clip((255 - K) - (C * (255 - K)) / 255) with its rounded division by 255.
func rgbFromAdobeCMYK(_ cmyk: [UInt8]) -> [UInt8] {   // [n, 4] -> [n, 3]
    let n = cmyk.count / 4
    return [UInt8](unsafeUninitializedCapacity: n * 3) { rgb, count in
        cmyk.withUnsafeBufferPointer { src in
            for i in 0..<n {
                let nk = Int(src[4 * i + 3])   // 255 - K
                for c in 0..<3 {
                    let ink = 255 - Int(src[4 * i + c])   // C, M or Y
                    rgb[3 * i + c] = UInt8(clamping: nk - mulDiv255(ink, nk))
                }
            }
        }
        count = n * 3
    }
}

/// a * b / 255 rounded, in PIL's integer form ((t >> 8) + t) >> 8 with t = a * b + 128.
@inline(__always) private func mulDiv255(_ a: Int, _ b: Int) -> Int {
    let t = a * b + 128
    return ((t >> 8) + t) >> 8
}
