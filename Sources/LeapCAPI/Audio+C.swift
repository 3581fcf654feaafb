import CLeap
import Glibc
import LeapAudio
import LeapCore

// leap_audio_* and leap_resampler_*: WAV decoding/encoding, the model input path, resampling, and the
// bridge from a C leap_audio_callback to LeapAudio's AudioSink.

private func rate(_ r: Int32, _ name: StaticString) throws -> Int {
    guard r >= 1, r <= 1_000_000 else { throw LeapError.invalidArgument("\(name) must be in 1...1000000, got \(r)") }
    return Int(r)
}

private func bytes(_ p: UnsafeRawPointer?, _ n: Int, _ name: StaticString) throws -> UnsafeRawBufferPointer {
    UnsafeRawBufferPointer(try borrowedBuffer(p?.assumingMemoryBound(to: UInt8.self), n, name))
}

private func floats(_ p: UnsafePointer<Float>?, _ n: Int, _ name: StaticString) throws -> UnsafeBufferPointer<Float> {
    try borrowedBuffer(p, n, name)
}

@c @implementation
public func leap_audio_decode_wav(_ wav: UnsafeRawPointer?, _ n: Int, _ outSamples: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?,
                                  _ outFrames: UnsafeMutablePointer<Int>?, _ outChannels: UnsafeMutablePointer<Int32>?,
                                  _ outRate: UnsafeMutablePointer<Int32>?) -> leap_status {
    ffi {
        let outSamples = try required(outSamples, "out_samples")
        let outFrames = try required(outFrames, "out_frames")
        let outChannels = try required(outChannels, "out_channel_count")
        let outRate = try required(outRate, "out_sample_rate")
        outSamples.pointee = nil
        outFrames.pointee = 0
        outChannels.pointee = 0
        outRate.pointee = 0
        let audio = try decodeWAV(try bytes(wav, n, "wav"))
        outSamples.pointee = try ownedBuffer(audio.samples)
        outFrames.pointee = audio.frameCount
        outChannels.pointee = Int32(clamping: audio.channels)  // <= 64 (checked by decodeWAV)
        outRate.pointee = Int32(clamping: audio.sampleRate)  // <= 1 MHz (checked by decodeWAV)
    }
}

@c @implementation
public func leap_audio_load_wav(_ wav: UnsafeRawPointer?, _ n: Int, _ targetRate: Int32,
                                _ outSamples: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?,
                                _ outCount: UnsafeMutablePointer<Int>?) -> leap_status {
    ffi {
        try returnBuffer(outSamples, "out_samples", outCount, "out_count") {
            let target = targetRate == 0 ? modelInputSampleRate : try rate(targetRate, "target_rate")
            return try loadWAV(try bytes(wav, n, "wav"), targetRate: target)
        }
    }
}

@c @implementation
public func leap_audio_resample(_ samples: UnsafePointer<Float>?, _ n: Int, _ fromRate: Int32, _ toRate: Int32,
                                _ outSamples: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?,
                                _ outCount: UnsafeMutablePointer<Int>?) -> leap_status {
    ffi {
        let outSamples = try required(outSamples, "out_samples")
        let outCount = try required(outCount, "out_count")
        outSamples.pointee = nil
        outCount.pointee = 0
        let r = try Resampler(inputRate: try rate(fromRate, "from_rate"), outputRate: try rate(toRate, "to_rate"))
        var out = r.process(try floats(samples, n, "samples"))
        out.append(contentsOf: r.flush())
        outSamples.pointee = try ownedBuffer(out)
        outCount.pointee = out.count
        try returnBuffer(outSamples, "out_samples", outCount, "out_count") {
            var r = try Resampler(inputRate: try rate(fromRate, "from_rate"), outputRate: try rate(toRate, "to_rate"))
            var out = r.process(try floats(samples, n, "samples"))
            out.append(contentsOf: r.flush())
            return out
        }
    }
}

@c @implementation
public func leap_audio_encode_wav(_ interleaved: UnsafePointer<Float>?, _ frames: Int, _ channels: Int32, _ sampleRate: Int32,
                                  _ encoding: leap_audio_encoding, _ outWav: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
                                  _ outSize: UnsafeMutablePointer<Int>?) -> leap_status {
    ffi {
        try returnBuffer(outWav, "out_wav", outSize, "out_size") {
            let enc: WAVOutputEncoding
            switch encoding {
            case LEAP_AUDIO_ENCODING_F32: enc = .float32
            case LEAP_AUDIO_ENCODING_S16: enc = .int16
            default: throw LeapError.invalidArgument("encoding \(encoding.rawValue) is not a leap_audio_encoding value")
            }
            guard channels >= 1, channels <= 256 else { throw LeapError.invalidArgument("channel_count must be in 1...256, got \(channels)") }
            let (total, overflow) = frames.multipliedReportingOverflow(by: Int(channels))
            guard !overflow, frames >= 0, total <= Int(Int32.max) else { throw LeapError.invalidArgument("n_frames \(frames) is too large") }
            return try encodeWAV(try floats(interleaved, total, "interleaved"), channels: Int(channels),
                                 sampleRate: try rate(sampleRate, "sample_rate"), encoding: enc)
        }
    }
}

// MARK: - Streaming resampler

final class ResamplerBox: HandleBox {
    var resampler: Resampler
    init(_ r: Resampler) {
        resampler = r
        super.init(kind: .resampler)
    }
}

@c @implementation
public func leap_resampler_create(_ fromRate: Int32, _ toRate: Int32, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_resampler")
        out.pointee = nil
        let r = try Resampler(inputRate: try rate(fromRate, "from_rate"), outputRate: try rate(toRate, "to_rate"))
        out.pointee = Handle.retain(ResamplerBox(r))
    }
}

@c @implementation
public func leap_resampler_process(_ p: OpaquePointer?, _ samples: UnsafePointer<Float>?, _ n: Int,
                                   _ outSamples: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?,
                                   _ outCount: UnsafeMutablePointer<Int>?) -> leap_status {
    ffi {
        try returnBuffer(outSamples, "out_samples", outCount, "out_count") {
            let box = try Handle.borrow(p, ResamplerBox.self, kind: .resampler, "resampler")
            return box.resampler.process(try floats(samples, n, "samples"))
        }
    }
}

@c @implementation
public func leap_resampler_flush(_ p: OpaquePointer?, _ outSamples: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?,
                                 _ outCount: UnsafeMutablePointer<Int>?) -> leap_status {
    ffi {
        try returnBuffer(outSamples, "out_samples", outCount, "out_count") {
            let box = try Handle.borrow(p, ResamplerBox.self, kind: .resampler, "resampler")
            let out = box.resampler.flush()
            // Ready for the next stream.
            box.resampler = try Resampler(inputRate: box.resampler.inputRate, outputRate: box.resampler.outputRate)
            return out
        }
    }
}

@c @implementation
public func leap_resampler_free(_ p: OpaquePointer?) {
    Handle.release(p, kind: .resampler)
}

// MARK: - Audio output callback

/// Wraps a C `leap_audio_callback` as the sink the conversation code hands generated audio to.
/// Returns nil when `callback` is NULL (audio is then only accumulated into the final message).
package func audioSink(_ callback: leap_audio_callback?, _ userData: UnsafeMutableRawPointer?) -> AudioSink? {
    guard let callback else { return nil }
    return { chunk in
        let stop = chunk.samples.withUnsafeBufferPointer { buf in
            callback(buf.baseAddress, buf.count, Int32(clamping: chunk.sampleRate), userData)
        }
        return stop == 0
    }
}
