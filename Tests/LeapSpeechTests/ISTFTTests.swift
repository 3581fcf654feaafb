import Glibc
import Testing
import LeapSpeech

/// x[n] = (1/N) Σ_k X[k] e^{2πi kn/N} over the Hermitian extension, in double precision.
private func directInverseDFT(re: [Float], im: [Float], n: Int) -> [Double] {
    (0..<n).map { t in
        var s = 0.0
        for k in 0..<n {
            let (r, i): (Double, Double) = k <= n / 2 ? (Double(re[k]), Double(im[k])) : (Double(re[n - k]), -Double(im[n - k]))
            let a = 2 * Double.pi * Double(k * t % n) / Double(n)
            s += r * cos(a) - i * sin(a)
        }
        return s / Double(n)
    }
}

// The mixed-radix transform against the direct DFT, for the ISTFT's size (4⁴·5) and sizes with radices
// 2, 3, 5, 7 and 11 (the direct DFT stage): the imaginary parts of bins 0 and N/2 must not count.
@Test(arguments: [1280, 8, 12, 30, 42, 110, 2 * 3 * 5 * 7])
func inverseRealFFTMatchesDirectDFT(n: Int) throws {
    var fft = try InverseRealFFT(size: n)
    var gen = TestNumbers(state: UInt64(n))
    let re = (0...(n / 2)).map { _ in gen.next() }
    let im = (0...(n / 2)).map { _ in gen.next() }
    var out = [Float](repeating: 0, count: n)
    fft(re: re, im: im, into: &out)
    let expected = directInverseDFT(re: re, im: im, n: n)
    var err = 0.0
    for i in 0..<n { err = max(err, abs(Double(out[i]) - expected[i])) }
    // Float arithmetic over log2(N) stages of values of order 1/sqrt(N): far below 1e-5.
    #expect(err < 1e-5, "n \(n): max error \(err)")
}

@Test func inverseRealFFTRejectsOddSizes() {
    #expect(leapError { _ = try InverseRealFFT(size: 1281) }?.kind == .invalidArgument)
    #expect(leapError { _ = try InverseRealFFT(size: 0) }?.kind == .invalidArgument)
}

/// liquid-audio's ISTFT ("same" padding) written out directly: every frame's direct inverse DFT, windowed,
/// overlap-added over the whole sequence, divided by the summed squared window, 480 samples cut at each end.
private func wholeISTFT(_ spectra: [[Float]]) -> [Double] {
    let n = 1280, hop = 320, bins = 641, pad = 480
    let frames = spectra.count
    let length = (frames - 1) * hop + n
    var y = [Double](repeating: 0, count: length), env = y
    let w = (0..<n).map { 0.5 - 0.5 * cos(2 * Double.pi * Double($0) / Double(n)) }
    for (f, s) in spectra.enumerated() {
        let re = (0..<bins).map { Float(exp(Double(s[$0])) * cos(Double(s[bins + $0]))) }
        let im = (0..<bins).map { Float(exp(Double(s[$0])) * sin(Double(s[bins + $0]))) }
        let x = directInverseDFT(re: re, im: im, n: n)
        for j in 0..<n {
            y[f * hop + j] += x[j] * w[j]
            env[f * hop + j] += w[j] * w[j]
        }
    }
    return (pad..<(length - pad)).map { y[$0] / env[$0] }
}

// Streaming (frame by frame, then the tail) equals the whole-sequence ISTFT, with the sample counts of a
// turn: none for the first STFT frame, 160 for the second, 320 after, 480 at the end.
@Test func streamingISTFTEqualsWholeSequence() {
    var gen = TestNumbers(state: 99)
    let frames = 9
    let spectra: [[Float]] = (0..<frames).map { _ in
        (0..<641).map { _ in 0.5 * gen.next() } + (0..<641).map { _ in 3.14159 * gen.next() }
    }
    var istft = StreamingISTFT()
    var out: [Float] = []
    var counts: [Int] = []
    for s in spectra {
        let before = out.count
        s.withUnsafeBufferPointer { istft.push($0.baseAddress!, into: &out) }
        counts.append(out.count - before)
    }
    let before = out.count
    istft.finish(into: &out)
    #expect(counts == [0, 160] + [Int](repeating: 320, count: frames - 2))
    #expect(out.count - before == 480)
    let whole = wholeISTFT(spectra)
    #expect(out.count == whole.count && whole.count == 320 * frames)
    var err = 0.0
    for i in whole.indices { err = max(err, abs(Double(out[i]) - whole[i])) }
    // Float FFT and OLA against double arithmetic; samples are sums of magnitudes up to e^0.5.
    #expect(err < 1e-5, "max error \(err)")

    // A reset starts a new turn: the same spectra give the same samples again.
    var again: [Float] = []
    for s in spectra { s.withUnsafeBufferPointer { istft.push($0.baseAddress!, into: &again) } }
    istft.finish(into: &again)
    #expect(again == out)
}
