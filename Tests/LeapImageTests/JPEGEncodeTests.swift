import LeapCore
import LeapImage
import LeapTestFiles
import Testing

@Suite struct JPEGEncodeTests {
    func fixtureImage() throws -> RGBImage {
        let pixels = try #require(readBytes("\(imageFixturesDir)/encode_q90_420.rgb"))
        return try RGBImage(width: 48, height: 40, pixels: pixels)
    }

    /// PIL's encoder is libjpeg-turbo as well (same forward DCT, quantization tables for quality 90 and
    /// 4:2:0 downsampling), so our file must decode to exactly the pixels of PIL's file.
    @Test func encodesLikePIL() throws {
        try requireTurboJPEG()
        let image = try fixtureImage()
        let ours = try JPEG.decode(try JPEG.encode(image, quality: 90))
        let pil = try JPEG.decode(try #require(readBytes("\(imageFixturesDir)/encode_q90_420.jpg")))
        #expect(ours.width == pil.width && ours.height == pil.height)
        let differing = zip(ours.pixels, pil.pixels).filter { $0 != $1 }.count
        #expect(differing == 0, "\(differing) of \(pil.pixels.count) bytes differ from PIL's file")
    }

    /// Round trip of a gray image (R = G = B: no chroma for 4:2:0 to lose): the error shrinks as quality
    /// grows, and at 100 (every quantization step 1) only the integer DCT's and colour conversion's
    /// rounding remains, well under one level on average.
    @Test func roundTripErrorFollowsQuality() throws {
        try requireTurboJPEG()
        let rgb = try fixtureImage()
        var gray = rgb.pixels
        for i in 0..<(gray.count / 3) { (gray[3 * i], gray[3 * i + 2]) = (gray[3 * i + 1], gray[3 * i + 1]) }
        let image = try RGBImage(width: rgb.width, height: rgb.height, pixels: gray)
        func meanAbsError(_ q: Int) throws -> Double {
            let back = try JPEG.decode(try JPEG.encode(image, quality: q))
            #expect(back.width == image.width && back.height == image.height)
            let sum = zip(back.pixels, image.pixels).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }
            return Double(sum) / Double(image.pixels.count)
        }
        let errors = try [10, 50, 90, 100].map(meanAbsError)
        #expect(errors[0] > errors[1] && errors[1] > errors[2] && errors[2] > errors[3], "\(errors)")
        #expect(errors[3] < 1, "\(errors)")
    }

    @Test func rejectsBadQuality() throws {
        try requireTurboJPEG()
        let image = try fixtureImage()
        for q in [0, 101, -5] {
            #expect(throws: LeapError.invalidArgument("JPEG quality \(q) is outside 1...100")) {
                try JPEG.encode(image, quality: q)
            }
        }
    }

    @Test func encodesOddAndTinySizes() throws {
        try requireTurboJPEG()
        for (w, h) in [(1, 1), (3, 7), (17, 1)] {
            let image = try RGBImage(width: w, height: h, pixels: (0..<(w * h * 3)).map { UInt8($0 * 37 % 256) })
            let back = try JPEG.decode(try JPEG.encode(image, quality: 95))
            #expect(back.width == w && back.height == h)
        }
    }
}
