// The engine's audio input path: WAV bytes -> mono float samples at the model's rate (16 kHz).
import LeapCore

/// The sample rate audio encoders take.
package let modelInputSampleRate = 16_000

/// Requires mono: models take one channel, and mixing channels down silently would hide a caller's mistake.
package func requireMono(_ audio: PCMAudio) throws {
    guard audio.channels == 1 else {
        throw LeapError(.audioFormat, "mono required, got \(audio.channels) channels")
    }
}

/// Validates, decodes and resamples a mono WAV file to `targetRate` (16 kHz for the models).
package func loadWAV(_ bytes: UnsafeRawBufferPointer, targetRate: Int = modelInputSampleRate) throws -> [Float] {
    let audio = try decodeWAV(bytes)
    try requireMono(audio)
    return try Resampler.resample(audio.samples, from: audio.sampleRate, to: targetRate)
}

package func loadWAV(_ bytes: [UInt8], targetRate: Int = modelInputSampleRate) throws -> [Float] {
    try bytes.withUnsafeBytes { try loadWAV($0, targetRate: targetRate) }
}
