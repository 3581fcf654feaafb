// RGBImage: 8-bit RGB pixels, row after row (what JPEG decoding gives and what the vision pre-processing takes).
import LeapCore

package struct RGBImage: Sendable, Equatable {
    package let width: Int
    package let height: Int
    package var pixels: [UInt8]   // [height, width, 3]

    /// Checks that `pixels` holds exactly width × height × 3 bytes.
    package init(width: Int, height: Int, pixels: [UInt8]) throws {
        guard width > 0, height > 0 else {
            throw LeapError.invalidArgument("image dimensions \(width)x\(height) must be positive")
        }
        let (n, o1) = width.multipliedReportingOverflow(by: height)
        let (bytes, o2) = n.multipliedReportingOverflow(by: 3)
        guard !o1, !o2, pixels.count == bytes else {
            throw LeapError.invalidArgument("an RGB image of \(width)x\(height) needs \(width)x\(height)x3 bytes, got \(pixels.count)")
        }
        self.width = width
        self.height = height
        self.pixels = pixels
    }
}
