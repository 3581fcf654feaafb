// ImageSignature: the container format of encoded image bytes, from their first bytes (so that a PNG given
// where a JPEG is expected is named as such instead of failing as "corrupt JPEG").

package enum ImageSignature: String, Sendable, Equatable {
    case jpeg = "JPEG"
    case png = "PNG"
    case gif = "GIF"
    case webp = "WebP"
    case bmp = "BMP"
    case tiff = "TIFF"
    case heif = "HEIF/AVIF"
    case unknown = "unknown"

    /// Signatures: JPEG FF D8 FF (SOI then a marker); PNG 89 'PNG' 0D 0A 1A 0A; GIF 'GIF87a' / 'GIF89a';
    /// WebP 'RIFF' <size> 'WEBP'; BMP 'BM'; TIFF 'II' 2A 00 / 'MM' 00 2A; HEIF / AVIF <size> 'ftyp' brand.
    package static func of(_ b: UnsafeRawBufferPointer) -> ImageSignature {
        func starts(_ prefix: [UInt8], at offset: Int = 0) -> Bool {
            guard b.count >= offset + prefix.count else { return false }
            for (i, v) in prefix.enumerated() where b[offset + i] != v { return false }
            return true
        }
        if starts([0xFF, 0xD8, 0xFF]) { return .jpeg }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return .gif }
        if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) { return .webp }
        if starts(Array("BM".utf8)) { return .bmp }
        if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A]) { return .tiff }
        if starts(Array("ftyp".utf8), at: 4) {
            for brand in ["heic", "heix", "hevc", "mif1", "msf1", "avif", "avis"] where starts(Array(brand.utf8), at: 8) {
                return .heif
            }
        }
        return .unknown
    }
}
