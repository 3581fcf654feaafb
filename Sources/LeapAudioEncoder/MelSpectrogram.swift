// MelSpectrogram: NeMo's AudioToMelSpectrogramPreprocessor at inference (LFM2-Audio's front end).
//
// For n samples at 16 kHz:
//   1. pre-emphasis y[0] = x[0], y[t] = x[t] − 0.97·x[t−1] (before any padding);
//   2. frames f = 0 ... n/160 (n/160 + 1 of them), each the 512 samples starting at f·160 of y zero-padded
//      by 256 on both sides (center=True, constant), times a symmetric 400-sample Hann window centred in the
//      512 (offset 56): frame f reads y[f·160 − 200 + k]·hann[k], k < 400;
//   3. power spectrum |FFT|² (257 bins), 128 Slaney mel triangles, ln(mel + 2⁻²⁴);
//   4. per mel bin, over the n/160 valid frames: mean and unbiased std; (x − mean) / (std + 1e-5);
//      frames from n/160 on (the last one) set to 0.
// Output is time-major [frames, 128], the layout the subsampling convolution reads.
//
// FFTs run 32 frames at a time in the batched complex FFT of the audio kernels: two real frames ride in
// the real and imaginary parts of each of its 16 lanes and are separated afterwards
// (A[k] = (Z[k] + conj Z[N−k]) / 2, B[k] = (Z[k] − conj Z[N−k]) / 2i).
import CLeapMediaKernels
import Glibc
import LeapCore
import LeapKernels

struct MelSpectrogram: Sendable {
    static let sampleRate = 16_000
    static let fftSize = 512
    static let windowLength = 400
    static let hop = 160
    static let preEmphasis: Float = 0.97
    static let logGuard: Float = 1.0 / Float(1 << 24)  // 2⁻²⁴
    static let stdEpsilon: Float = 1e-5

    let melCount: Int
    let filterbank: SlaneyMelFilterbank
    let window: [Float]                      // [windowLength] symmetric Hann
    let twiddleRe: [Float], twiddleIm: [Float]  // exp(−2πik/N), k < N/2
    let bitReversed: [Int]                   // natural bin k sits at position bitReversed[k] of the FFT output

    private static let lanes = Int(LK_FFT_LANES)
    private static let framesPerBatch = 2 * lanes

    init(melCount: Int) {
        self.melCount = melCount
        let n = Self.fftSize
        filterbank = SlaneyMelFilterbank(
            sampleRate: Self.sampleRate, fftSize: n, melCount: melCount, minFrequency: 0,
            maxFrequency: Double(Self.sampleRate) / 2)
        let w = Self.windowLength
        // torch.hann_window(400, periodic=False) in float: 0.5 − 0.5·cos(2πk/399).
        window = (0..<w).map { k in Float(0.5 - 0.5 * cos(2 * Double.pi * Double(k) / Double(w - 1))) }
        twiddleRe = (0..<(n / 2)).map { Float(cos(-2 * Double.pi * Double($0) / Double(n))) }
        twiddleIm = (0..<(n / 2)).map { Float(sin(-2 * Double.pi * Double($0) / Double(n))) }
        var bits = 0
        while 1 << bits < n { bits += 1 }
        bitReversed = (0..<n).map { k in
            var r = 0
            for b in 0..<bits where k & (1 << b) != 0 { r |= 1 << (bits - 1 - b) }
            return r
        }
    }

    /// Frames produced for `sampleCount` samples (the last one is always zero after normalisation).
    static func frameCount(sampleCount: Int) -> Int { sampleCount / hop + 1 }

    /// The normalised log-mel features of 16 kHz mono samples: [frames, melCount], time-major.
    func compute(_ samples: UnsafeBufferPointer<Float>, pool: ThreadPool?) throws -> (frames: Int, values: [Float]) {
        let n = samples.count
        let valid = n / Self.hop
        guard valid >= 2 else {
            throw LeapError(
                .invalidArgument,
                "audio of \(n) samples is too short: the log-mel normalisation needs at least 2 frames of \(Self.hop) samples (\(2 * Self.hop) samples, 20 ms at 16 kHz)")
        }
        for i in 0..<n where !samples[i].isFinite {
            throw LeapError(.invalidArgument, "audio sample \(i) is not a finite number (\(samples[i]))")
        }
        let frames = Self.frameCount(sampleCount: n)
        let mels = melCount
        var values = [Float](repeating: 0, count: frames * mels)  // [frames, mels]
        var emphasized = [Float](repeating: 0, count: n)
        if let base = samples.baseAddress {
            emphasized[0] = base[0]
            for t in 1..<n { emphasized[t] = base[t] - Self.preEmphasis * base[t - 1] }
        }
        let batches = (frames + Self.framesPerBatch - 1) / Self.framesPerBatch
        let threads = pool?.threadCount ?? 1
        let workFloats = Self.fftSize * Self.lanes
        // Per thread: re, im [fftSize][lanes], power [bins].
        let perThread = 2 * workFloats + filterbank.binCount
        let work = UnsafeMutableRawPointer.allocate(byteCount: threads * perThread * 4, alignment: 64)
            .bindMemory(to: Float.self, capacity: threads * perThread)
        defer { work.deallocate() }
        emphasized.withUnsafeBufferPointer { y in
            values.withUnsafeMutableBufferPointer { outBuffer in
                guard let out = outBuffer.baseAddress else { return }
                let body: (Int, Int) -> Void = { batch, thread in
                    let base = work + thread * perThread
                    self.transformBatch(
                        y, firstFrame: batch * Self.framesPerBatch,
                        frameCount: min(Self.framesPerBatch, frames - batch * Self.framesPerBatch),
                        re: base, im: base + workFloats, power: base + 2 * workFloats, out: out)
                }
                if let pool { pool.run(tasks: batches, body) } else { for b in 0..<batches { body(b, 0) } }
            }
        }
        // Samples far beyond [-1, 1] (say 1e20) overflow the float power spectrum.
        if let bad = values.firstIndex(where: { !$0.isFinite }) {
            throw LeapError(
                .invalidArgument,
                "audio around sample \((bad / mels) * Self.hop) is too loud: its power spectrum overflows (samples are expected in [-1, 1])")
        }
        Self.normalize(&values, frames: frames, valid: valid, mels: mels)
        return (frames, values)
    }

    /// Log-mel of `frameCount` (≤ 32) frames from `firstFrame`, written to out[frame, :].
    private func transformBatch(
        _ y: UnsafeBufferPointer<Float>, firstFrame: Int, frameCount: Int,
        re: UnsafeMutablePointer<Float>, im: UnsafeMutablePointer<Float>,  // [fftSize][lanes]
        power: UnsafeMutablePointer<Float>,                                  // [bins]
        out: UnsafeMutablePointer<Float>                                     // [frames, mels]
    ) {
        let n = Self.fftSize, lanes = Self.lanes, w = Self.windowLength
        let offset = (n - w) / 2  // window position inside the FFT frame
        re.initialize(repeating: 0, count: n * lanes)
        im.initialize(repeating: 0, count: n * lanes)
        window.withUnsafeBufferPointer { hann in
            for i in 0..<frameCount {
                let dst = i % 2 == 0 ? re : im
                let lane = i / 2
                let start = (firstFrame + i) * Self.hop - n / 2 + offset  // sample under hann[0]
                let k0 = max(0, -start), k1 = min(w, y.count - start)
                var k = k0
                while k < k1 {
                    dst[(offset + k) * lanes + lane] = y[start + k] * hann[k]
                    k += 1
                }
            }
        }
        twiddleRe.withUnsafeBufferPointer { tr in
            twiddleIm.withUnsafeBufferPointer { ti in
                lk_audio_fft_forward(re, im, n, tr.baseAddress, ti.baseAddress)
            }
        }
        let bins = filterbank.binCount
        bitReversed.withUnsafeBufferPointer { br in
            for i in 0..<frameCount {
                let lane = i / 2, second = i % 2 == 1
                for k in 0..<bins {
                    let p = br[k] * lanes + lane, q = br[(n - k) % n] * lanes + lane
                    let zr = re[p], zi = im[p], cr = re[q], ci = im[q]
                    // first frame: (Z[k] + conj Z[N−k]) / 2; second: (Z[k] − conj Z[N−k]) / 2i
                    let a = second ? zr - cr : zr + cr
                    let b = second ? zi + ci : zi - ci
                    power[k] = (a * a + b * b) * 0.25
                }
                let row = out + (firstFrame + i) * melCount
                filterbank.apply(power: power, into: row)
                for m in 0..<melCount { row[m] = logf(row[m] + Self.logGuard) }
            }
        }
    }

    /// Per mel bin over the first `valid` frames: (x − mean) / (unbiased std + 1e-5); later frames are 0.
    private static func normalize(_ values: inout [Float], frames: Int, valid: Int, mels: Int) {
        values.withUnsafeMutableBufferPointer { v in
            for m in 0..<mels {
                var sum = 0.0
                for f in 0..<valid { sum += Double(v[f * mels + m]) }
                let mean = sum / Double(valid)
                var sq = 0.0
                for f in 0..<valid {
                    let d = Double(v[f * mels + m]) - mean
                    sq += d * d
                }
                let std = Float((sq / Double(valid - 1)).squareRoot()) + stdEpsilon
                let meanF = Float(mean)
                for f in 0..<valid { v[f * mels + m] = (v[f * mels + m] - meanF) / std }
                for f in valid..<frames { v[f * mels + m] = 0 }
            }
        }
    }
}
