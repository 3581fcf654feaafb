// A streaming sharp low-pass FIR (optionally upsampling by 2) computed by FFT overlap-save.
//
// The long, steep anti-aliasing filter is where a resampler spends its time; in the frequency domain its
// cost no longer grows with its length. Output phase p of input sample n (time n + p/U) is
//     y_p[n] = sum_j g_p[j] * x[n - (halfLength - 1) + j]
// (the polyphase table's rows, zero phase). Blocks of N buffered inputs give B = N - K + 1 outputs per phase
// (K = taps); two consecutive blocks ride in the real and imaginary parts of one complex FFT (the filter
// is real, so they stay apart), and 16 such pairs run side by side in the batched C FFT. Pairs are formed
// by absolute block index and lanes never interact, so results do not depend on how input was chunked.
// Decimating by 2 (an exact 2:1 step after the filter) folds each spectrum to half size before the
// inverse FFT, which then yields only the even-indexed outputs (B is even so every block starts on one).
import CLeapMediaKernels
import Glibc

final class FFTFilterStage {
    let upsample: Int                 // U: 1 or 2 output phases per input sample
    let decimate: Int                 // D: 1, or 2 to keep every other output (only with U = 1)
    let taps: Int                     // K
    let size: Int                     // N (power of two)
    let blockOutputs: Int             // B = N - K + 1 (rounded down to even when D = 2)
    let twiddleRe: [Float], twiddleIm: [Float]   // exp(-2 pi i k / N), k < N/2
    let halfTwiddleRe: [Float], halfTwiddleIm: [Float]  // exp(-2 pi i k / (N/2)), k < N/4 (for D = 2)
    let spectraRe: [[Float]], spectraIm: [[Float]]  // per phase: conj(FFT(g_p)) / N, bit-reversed order
    let buffer = SampleQueue()        // input; the next pair of blocks starts at its first sample
    var inputCount = 0
    var outputCount = 0
    // Work arrays [N][lanes] for the batch, reused.
    let workRe: UnsafeMutablePointer<Float>, workIm: UnsafeMutablePointer<Float>
    let outRe: UnsafeMutablePointer<Float>, outIm: UnsafeMutablePointer<Float>  // phase 0 of two

    static let lanes = Int(LK_FFT_LANES)

    init(table: PolyphaseTable, upsample: Int, decimate: Int = 1) {
        self.upsample = upsample
        self.decimate = upsample == 1 && decimate == 2 ? 2 : 1
        let k = table.taps
        var n = 1024
        while n < 4 * k { n *= 2 }
        self.taps = k
        self.size = n
        self.blockOutputs = self.decimate == 2 ? (n - k + 1) / 2 * 2 : n - k + 1
        var tr = [Float](repeating: 0, count: n / 2), ti = [Float](repeating: 0, count: n / 2)
        for i in 0..<(n / 2) {
            let a = -2 * Double.pi * Double(i) / Double(n)
            tr[i] = Float(cos(a))
            ti[i] = Float(sin(a))
        }
        twiddleRe = tr
        twiddleIm = ti
        halfTwiddleRe = stride(from: 0, to: n / 2, by: 2).map { tr[$0] }
        halfTwiddleIm = stride(from: 0, to: n / 2, by: 2).map { ti[$0] }
        // Filter spectra: FFT of each phase's taps (lane 0 of a batch), conjugated for correlation.
        let lanes = FFTFilterStage.lanes
        var sre: [[Float]] = [], sim: [[Float]] = []
        for p in 0..<upsample {
            var re = [Float](repeating: 0, count: n * lanes), im = [Float](repeating: 0, count: n * lanes)
            for j in 0..<k { re[j * lanes] = table.coefficients[p * k + j] }
            re.withUnsafeMutableBufferPointer { r in
                im.withUnsafeMutableBufferPointer { i in
                    lk_audio_fft_forward(r.baseAddress, i.baseAddress, n, tr, ti)
                }
            }
            let scale = 1 / Float(n)
            sre.append((0..<n).map { re[$0 * lanes] * scale })
            sim.append((0..<n).map { -im[$0 * lanes] * scale })
        }
        spectraRe = sre
        spectraIm = sim
        buffer.appendZeros(table.halfLength - 1)
        let workSize = n * lanes
        workRe = allocateAlignedFloats(workSize)
        workIm = allocateAlignedFloats(workSize)
        outRe = allocateAlignedFloats(upsample > 1 ? workSize : 0)
        outIm = allocateAlignedFloats(upsample > 1 ? workSize : 0)
    }

    deinit {
        for p in [workRe, workIm, outRe, outIm] { p.deallocate() }
    }

    /// Inputs a pair of blocks needs beyond its start.
    var pairSpan: Int { blockOutputs + size }

    /// Runs on `count` samples appended to `buffer` (by the caller or a previous stage). With `fullBatchesOnly`,
    /// pairs that do not fill a whole batch wait for more input (a partial batch costs a full one).
    func received(_ count: Int, into out: SampleQueue, fullBatchesOnly: Bool = false) {
        inputCount += count
        run(into: out, limit: Int.max, fullBatchesOnly: fullBatchesOnly)
    }

    /// Runs every complete pair of blocks (at most `limit` outputs are kept).
    private func run(into out: SampleQueue, limit: Int, fullBatchesOnly: Bool = false) {
        let lanes = FFTFilterStage.lanes
        let n = size, b = blockOutputs
        var pairs = buffer.count >= pairSpan ? (buffer.count - pairSpan) / (2 * b) + 1 : 0
        var kept = 0
        while pairs > 0 && kept < limit {
            let batch = min(pairs, lanes)
            if fullBatchesOnly && batch < lanes { break }
            // Load: lane l, real part = block starting at 2bl, imaginary part = block at 2bl + b.
            lk_audio_fft_load_pairs(buffer.samples, b, n, batch, workRe, workIm)
            lk_audio_fft_forward(workRe, workIm, n, twiddleRe, twiddleIm)
            // Filter each phase and transform back. Phase 0 of two goes to out*, the last phase overwrites
            // the input spectrum in work*.
            let perBlock = b / decimate   // outputs per block and phase
            let produced = 2 * perBlock * batch * upsample
            for p in 0..<upsample {
                let last = p == upsample - 1
                let yr = last ? workRe : outRe, yi = last ? workIm : outIm
                lk_audio_spectrum_multiply(workRe, workIm, spectraRe[p], spectraIm[p], yr, yi, n)
                if decimate == 2 {
                    lk_audio_spectrum_fold2(yr, yi, n)
                    lk_audio_fft_inverse(yr, yi, n / 2, halfTwiddleRe, halfTwiddleIm)
                } else {
                    lk_audio_fft_inverse(yr, yi, n, twiddleRe, twiddleIm)
                }
            }
            let dest = out.reserve(produced)
            if upsample == 1 {
                lk_audio_fft_store_pairs(workRe, workIm, nil, nil, 1, perBlock, batch, dest)
            } else {
                lk_audio_fft_store_pairs(outRe, outIm, workRe, workIm, 2, perBlock, batch, dest)
            }
            out.commit(produced)
            buffer.drop(2 * b * batch)
            outputCount += produced
            kept += produced
            pairs -= batch
        }
    }

    /// Ends the stream: outputs for the input plus the filter's tail (`halfLength` input samples of
    /// silence), `upsample` per input sample (one per `decimate`).
    func finish(halfLength: Int, into out: SampleQueue) {
        let total = (upsample * (inputCount + halfLength) + decimate - 1) / decimate
        guard total > outputCount else { return }
        // Enough silence to complete the pair holding the last needed output.
        let needInputs = ((total - outputCount) * decimate + upsample - 1) / upsample
        buffer.appendZeros(needInputs + pairSpan + 2 * blockOutputs)
        run(into: out, limit: total - outputCount)
        let excess = outputCount - total
        if excess > 0 {
            out.dropLast(excess)
            outputCount = total
        }
    }
}
