// StreamingISTFT: the detokenizer's spectra → waveform, one STFT frame at a time, equal to liquid-audio's
// ISTFT(n_fft 1280, hop 320, win 1280, padding "same") over the whole sequence:
//
//   frame f:  y_f = irfft(exp(logmag) · e^{i·phase}, n = 1280) ⊙ w        w = periodic Hann(1280)
//   OLA:      y[n] = Σ_f y_f[n - 320 f],   env[n] = Σ_f w²[n - 320 f]
//   output:   y[n] / env[n] for n in 480 ..< 320·F + 480  ("same" padding drops 480 = (1280-320)/2 each end)
//
// After frame f the samples before 320·(f+1) are final: `push` returns them (the first 480 of a turn are
// dropped, so the first frame gives none, the second 160, then 320 each: 1920 per 6-frame audio frame after
// the first 1440); `finish` returns the last 480, normalised by the envelope of the frames that reach them.
import Glibc
import LeapCore

package struct StreamingISTFT {
    package static let fftSize = 1280
    package static let hop = 320
    package static let bins = fftSize / 2 + 1                 // 641
    /// Floats per frame: 641 log-magnitudes then 641 phases.
    package static let frameWidth = 2 * bins                  // 1282
    /// Samples dropped at each end of a turn ("same" padding).
    package static let padding = (fftSize - hop) / 2          // 480

    private var fft: InverseRealFFT
    private let window: [Float]                               // [1280] periodic Hann
    private var overlap: [Float]                              // [1280] OLA of the pending samples
    private var envelope: [Float]                             // [1280] Σ w² of the pending samples
    private var toDrop = padding
    private var binRe: [Float], binIm: [Float], frame: [Float]

    package init() {
        let n = Self.fftSize
        fft = InverseRealFFT(checkedSize: n)
        window = (0..<n).map { Float(0.5 - 0.5 * cos(2 * Double.pi * Double($0) / Double(n))) }
        overlap = [Float](repeating: 0, count: n)
        envelope = overlap
        binRe = [Float](repeating: 0, count: Self.bins)
        binIm = binRe
        frame = overlap
    }

    /// Forgets the pending samples (a new turn: its first 480 samples will be dropped again).
    package mutating func reset() {
        for i in 0..<Self.fftSize { overlap[i] = 0; envelope[i] = 0 }
        toDrop = Self.padding
    }

    /// Adds one spectrum ([1282]: log-magnitudes, phases) and appends the samples that became final to `out`.
    package mutating func push(_ spectrum: UnsafePointer<Float>, into out: inout [Float]) {
        let n = Self.fftSize, hop = Self.hop, K = Self.bins
        for k in 0..<K {
            let mag = expf(spectrum[k]), phase = spectrum[K + k]
            binRe[k] = mag * cosf(phase)
            binIm[k] = mag * sinf(phase)
        }
        binRe.withUnsafeBufferPointer { r in
            binIm.withUnsafeBufferPointer { i in
                frame.withUnsafeMutableBufferPointer { f in
                    // Arrays of fixed, non-empty sizes.
                    if let rb = r.baseAddress, let ib = i.baseAddress, let fb = f.baseAddress { fft(re: rb, im: ib, into: fb) }
                }
            }
        }
        for j in 0..<n {
            overlap[j] += frame[j] * window[j]
            envelope[j] += window[j] * window[j]
        }
        emit(hop, into: &out)
        // shift the pending samples by one hop
        for j in 0..<(n - hop) {
            overlap[j] = overlap[j + hop]
            envelope[j] = envelope[j + hop]
        }
        for j in (n - hop)..<n { overlap[j] = 0; envelope[j] = 0 }
    }

    /// Appends the turn's last 480 samples (no frame follows) and resets.
    package mutating func finish(into out: inout [Float]) {
        emit(Self.padding, into: &out)
        reset()
    }

    private mutating func emit(_ count: Int, into out: inout [Float]) {
        let skip = min(toDrop, count)
        toDrop -= skip
        for j in skip..<count {
            // The envelope is > 0 everywhere but at sample 0 of a turn's first frame, which is dropped.
            out.append(envelope[j] > 1e-11 ? overlap[j] / envelope[j] : overlap[j])
        }
    }
}
