// InverseRealFFT: x[n] = (1/N) Σ_{k<N} X[k] e^{+2πi kn/N} for a Hermitian spectrum given by its N/2+1 bins
// (torch.fft.irfft / numpy irfft with norm "backward": the imaginary parts of bins 0 and N/2 do not count).
// N may be any even size. It runs on the audio kernels' batched power-of-two FFT (the one FFT of the
// library): N = P·M with M the largest power of two dividing N and P odd, and with k = P·k2 + p
//
//   x[n] = Σ_{p<P} e^{+2πi pn/N} · Y_p[n mod M],     Y_p[m] = Σ_{k2<M} X[P·k2 + p] e^{+2πi k2·m/M}
//
// so the P inverse transforms Y_p of size M run as lanes of the batched FFT, and one pass of P terms per
// output combines them (1280 = 5·256: five lanes of one 256-point transform, then 5 terms per sample).
import CLeapMediaKernels
import Glibc
import LeapCore

package struct InverseRealFFT {
    package let size: Int                    // N
    package var bins: Int { size / 2 + 1 }
    private let powerOfTwo: Int              // M
    private let oddFactor: Int               // P = N / M
    private let rootRe: [Float]              // [N] cos(2πt/N)
    private let rootIm: [Float]              // [N] sin(2πt/N) (the inverse transform's sign)
    private let twiddleRe: [Float], twiddleIm: [Float]  // [M/2] exp(−2πik/M), as the batched FFT takes them
    private let bitReversed: [Int]           // [M] position of input k in the FFT's bit-reversed input order
    private var laneRe: [Float], laneIm: [Float]  // [M][lanes] one batch of transforms
    private var subRe: [Float], subIm: [Float]    // [P][M] Y_p

    private static let lanes = Int(LK_FFT_LANES)

    package init(size n: Int) throws {
        guard n >= 2, n % 2 == 0, n <= 1 << 20 else {
            throw LeapError.invalidArgument("inverse real FFT size \(n) must be even and in 2...\(1 << 20)")
        }
        self.init(checkedSize: n)
    }

    /// `n` even and in 2...2^20.
    init(checkedSize n: Int) {
        size = n
        let m = n & -n
        powerOfTwo = m
        oddFactor = n / m
        rootRe = (0..<n).map { Float(cos(2 * Double.pi * Double($0) / Double(n))) }
        rootIm = (0..<n).map { Float(sin(2 * Double.pi * Double($0) / Double(n))) }
        twiddleRe = (0..<(m / 2)).map { Float(cos(-2 * Double.pi * Double($0) / Double(m))) }
        twiddleIm = (0..<(m / 2)).map { Float(sin(-2 * Double.pi * Double($0) / Double(m))) }
        let bits = m.trailingZeroBitCount
        bitReversed = (0..<m).map { k in
            var r = 0
            for b in 0..<bits where k & (1 << b) != 0 { r |= 1 << (bits - 1 - b) }
            return r
        }
        laneRe = [Float](repeating: 0, count: m * Self.lanes)
        laneIm = laneRe
        subRe = [Float](repeating: 0, count: n)
        subIm = subRe
    }

    /// out[n] for n < N from bins (re, im) k <= N/2.
    package mutating func callAsFunction(re binRe: UnsafePointer<Float>, im binIm: UnsafePointer<Float>,
                                         into out: UnsafeMutablePointer<Float>) {
        let n = size, half = n / 2, m = powerOfTwo, P = oddFactor, lanes = Self.lanes
        // X[k] of the Hermitian extension; bins 0 and N/2 are real.
        func bin(_ k: Int) -> (re: Float, im: Float) {
            if k == 0 || k == half { return (binRe[k], 0) }
            return k < half ? (binRe[k], binIm[k]) : (binRe[n - k], -binIm[n - k])
        }
        for first in stride(from: 0, to: P, by: lanes) {
            let used = min(lanes, P - first)
            for k2 in 0..<m {
                let row = bitReversed[k2] * lanes
                for l in 0..<lanes {
                    let x = l < used ? bin(P * k2 + first + l) : (re: 0, im: 0)
                    laneRe[row + l] = x.re
                    laneIm[row + l] = x.im
                }
            }
            laneRe.withUnsafeMutableBufferPointer { r in
                laneIm.withUnsafeMutableBufferPointer { i in
                    lk_audio_fft_inverse(r.baseAddress, i.baseAddress, m, twiddleRe, twiddleIm)
                }
            }
            for l in 0..<used {
                let p = first + l
                for j in 0..<m {
                    subRe[p * m + j] = laneRe[j * lanes + l]
                    subIm[p * m + j] = laneIm[j * lanes + l]
                }
            }
        }
        // Re(x[t]) = Σ_p cos(2π pt/N)·Re Y_p − sin(2π pt/N)·Im Y_p (the imaginary part is zero).
        let scale = 1 / Float(n)
        for t in 0..<n {
            let j = t % m
            var s: Float = 0
            for p in 0..<P {
                let r = p * t % n
                s += rootRe[r] * subRe[p * m + j] - rootIm[r] * subIm[p * m + j]
            }
            out[t] = s * scale
        }
    }
}
