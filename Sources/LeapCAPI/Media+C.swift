import CLeap
import LeapCore
import LeapImage
import LeapMessages
import LeapRuntime

// leap_model_has_* and leap_model_embed_*: what a model takes besides text, and the embedding rows of a
// media part as a conversation evaluates them.

private func flag(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?, _ value: (ModelRunner) -> Bool) -> leap_status {
    ffi {
        let out = try required(out, "out_flag")
        out.pointee = 0
        out.pointee = value(try borrowModel(m).runner) ? 1 : 0
    }
}

@c @implementation
public func leap_model_has_vision(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> leap_status {
    flag(m, out) { $0.supportsImages }
}

@c @implementation
public func leap_model_has_audio_input(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> leap_status {
    flag(m, out) { $0.supportsAudioInput }
}

@c @implementation
public func leap_model_has_audio_output(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> leap_status {
    flag(m, out) { $0.supportsAudioOutput }
}

/// Clears the three out-parameters, then fills them from `body`'s rows.
private func returnRows(_ out: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?, _ outRows: UnsafeMutablePointer<Int>?,
                        _ outEmbd: UnsafeMutablePointer<Int>?, _ body: () throws -> (rows: [Float], count: Int)) throws {
    out?.pointee = nil
    outRows?.pointee = 0
    outEmbd?.pointee = 0
    let out = try required(out, "out_rows")
    let outRows = try required(outRows, "out_n_rows")
    let outEmbd = try required(outEmbd, "out_n_embd")
    let (rows, count) = try body()
    out.pointee = try ownedBuffer(rows)
    outRows.pointee = count
    outEmbd.pointee = count > 0 ? rows.count / count : 0
}

@c @implementation
public func leap_model_embed_image(_ m: OpaquePointer?, _ jpeg: UnsafeRawPointer?, _ n: Int,
                                   _ out: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?,
                                   _ outRows: UnsafeMutablePointer<Int>?, _ outEmbd: UnsafeMutablePointer<Int>?) -> leap_status {
    ffi {
        try returnRows(out, outRows, outEmbd) {
            let runner = try borrowModel(m).runner
            let bytes = try array(jpeg?.assumingMemoryBound(to: UInt8.self), n, "jpeg")
            return try runner.embed(.image(jpeg: bytes))
        }
    }
}

@c @implementation
public func leap_model_embed_image_rgb(_ m: OpaquePointer?, _ rgb: UnsafePointer<UInt8>?, _ width: Int32, _ height: Int32,
                                       _ out: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?,
                                       _ outRows: UnsafeMutablePointer<Int>?, _ outEmbd: UnsafeMutablePointer<Int>?) -> leap_status {
    ffi {
        try returnRows(out, outRows, outEmbd) {
            let runner = try borrowModel(m).runner
            let image = try rgbImage(rgb, width, height)
            return try runner.embed(image: image)
        }
    }
}

/// width x height x 3 bytes of the caller as an RGBImage (dimensions checked before the size is used).
func rgbImage(_ rgb: UnsafePointer<UInt8>?, _ width: Int32, _ height: Int32) throws -> RGBImage {
    guard width > 0, height > 0 else { throw LeapError.invalidArgument("image dimensions \(width)x\(height) must be positive") }
    let (n, o) = (Int(width) * Int(height)).multipliedReportingOverflow(by: 3)
    guard !o else { throw LeapError.invalidArgument("an image of \(width)x\(height) is too large") }
    return try RGBImage(width: Int(width), height: Int(height), pixels: try array(rgb, n, "rgb"))
}

@c @implementation
public func leap_model_embed_audio(_ m: OpaquePointer?, _ wav: UnsafeRawPointer?, _ n: Int,
                                   _ out: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?,
                                   _ outRows: UnsafeMutablePointer<Int>?, _ outEmbd: UnsafeMutablePointer<Int>?) -> leap_status {
    ffi {
        try returnRows(out, outRows, outEmbd) {
            let runner = try borrowModel(m).runner
            let bytes = try array(wav?.assumingMemoryBound(to: UInt8.self), n, "wav")
            return try runner.embed(.audio(wav: bytes))
        }
    }
}

@c @implementation
public func leap_model_embed_audio_pcm(_ m: OpaquePointer?, _ samples: UnsafePointer<Float>?, _ n: Int, _ rate: Int32,
                                       _ out: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?,
                                       _ outRows: UnsafeMutablePointer<Int>?, _ outEmbd: UnsafeMutablePointer<Int>?) -> leap_status {
    ffi {
        try returnRows(out, outRows, outEmbd) {
            let runner = try borrowModel(m).runner
            let sr = try validSampleRate(rate)
            return try runner.embed(.audioPCMF32(samples: try samplesArray(samples, n, "samples"), sampleRate: sr))
        }
    }
}
