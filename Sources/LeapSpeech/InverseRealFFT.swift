// InverseRealFFT: x[n] = (1/N) Σ_{k<N} X[k] e^{+2πi kn/N} for a Hermitian spectrum given by its N/2+1 bins
// (torch.fft.irfft / numpy irfft with norm "backward": the imaginary parts of bins 0 and N/2 do not count).
// N may be any even size; the complex transform is a mixed-radix Stockham FFT (radices 4, 2, 3, 5, then
// any remaining prime by a direct DFT), so 1280 = 4⁴·5 costs a few microseconds.
//
// Stockham stage of radix R after `span` points are combined (span = product of the earlier radices):
//   for j < N/R:  v_r = a[j + r·N/R] · ω^{(j mod span)·r·N/(span·R)}   (ω = e^{±2πi/N})
//                 V = DFT_R(v);   b[(j / span)·span·R + (j mod span) + q·span] = V_q
import Glibc
import LeapCore

package struct InverseRealFFT {
    package let size: Int                    // N
    package var bins: Int { size / 2 + 1 }
    private let radices: [Int]
    private let rootRe: [Float]              // [N] cos(2πt/N)
    private let rootIm: [Float]              // [N] sin(2πt/N) (the inverse transform's sign)
    private var re: [Float], im: [Float]     // [N] working arrays
    private var re2: [Float], im2: [Float]   // [N]

    package init(size n: Int) throws {
        guard n >= 2, n % 2 == 0, n <= 1 << 20 else {
            throw LeapError.invalidArgument("inverse real FFT size \(n) must be even and in 2...\(1 << 20)")
        }
        self.init(checkedSize: n)
    }

    /// `n` even and in 2...2^20.
    init(checkedSize n: Int) {
        size = n
        var rest = n
        var rs: [Int] = []
        for p in [4, 2, 3, 5] {
            while rest % p == 0 { rs.append(p); rest /= p }
        }
        var f = 7
        while rest > 1 {
            while rest % f == 0 { rs.append(f); rest /= f }
            f += 2
        }
        radices = rs
        rootRe = (0..<n).map { Float(cos(2 * Double.pi * Double($0) / Double(n))) }
        rootIm = (0..<n).map { Float(sin(2 * Double.pi * Double($0) / Double(n))) }
        re = [Float](repeating: 0, count: n)
        im = re
        re2 = re
        im2 = re
    }

    /// out[n] for n < N from bins (re, im) k <= N/2.
    package mutating func callAsFunction(re binRe: UnsafePointer<Float>, im binIm: UnsafePointer<Float>,
                                         into out: UnsafeMutablePointer<Float>) {
        let n = size, half = n / 2
        re[0] = binRe[0]; im[0] = 0
        re[half] = binRe[half]; im[half] = 0
        for k in 1..<half {
            re[k] = binRe[k]; im[k] = binIm[k]
            re[n - k] = binRe[k]; im[n - k] = -binIm[k]
        }
        transform()
        let scale = 1 / Float(n)
        for i in 0..<n { out[i] = re[i] * scale }
    }

    /// In place on (re, im): the unscaled inverse complex DFT.
    private mutating func transform() {
        let n = size
        var span = 1
        var vRe = [Float](repeating: 0, count: radices.max() ?? 1), vIm = vRe
        var wRe = vRe, wIm = vRe
        for R in radices {
            let stride = n / R
            let twStep = n / (span * R)
            for j in 0..<stride {
                let k = j % span
                for r in 0..<R {
                    let a = re[j + r * stride], b = im[j + r * stride]
                    let t = (k * r * twStep) % n
                    vRe[r] = a * rootRe[t] - b * rootIm[t]
                    vIm[r] = a * rootIm[t] + b * rootRe[t]
                }
                Self.smallDFT(R, &vRe, &vIm, &wRe, &wIm, rootRe, rootIm, n)
                let base = (j / span) * span * R + k
                for q in 0..<R {
                    re2[base + q * span] = wRe[q]
                    im2[base + q * span] = wIm[q]
                }
            }
            swap(&re, &re2)
            swap(&im, &im2)
            span *= R
        }
    }

    /// w_q = Σ_r v_r e^{+2πi rq/R}.
    @inline(__always)
    private static func smallDFT(_ R: Int, _ vRe: inout [Float], _ vIm: inout [Float], _ wRe: inout [Float], _ wIm: inout [Float],
                                 _ rootRe: [Float], _ rootIm: [Float], _ n: Int) {
        switch R {
        case 2:
            wRe[0] = vRe[0] + vRe[1]; wIm[0] = vIm[0] + vIm[1]
            wRe[1] = vRe[0] - vRe[1]; wIm[1] = vIm[0] - vIm[1]
        case 4:
            let s0r = vRe[0] + vRe[2], s0i = vIm[0] + vIm[2]
            let d0r = vRe[0] - vRe[2], d0i = vIm[0] - vIm[2]
            let s1r = vRe[1] + vRe[3], s1i = vIm[1] + vIm[3]
            let d1r = vRe[1] - vRe[3], d1i = vIm[1] - vIm[3]
            wRe[0] = s0r + s1r; wIm[0] = s0i + s1i
            wRe[2] = s0r - s1r; wIm[2] = s0i - s1i
            // e^{+iπ/2} = i: q = 1 adds i·d1, q = 3 subtracts it
            wRe[1] = d0r - d1i; wIm[1] = d0i + d1r
            wRe[3] = d0r + d1i; wIm[3] = d0i - d1r
        default:
            let step = n / R
            for q in 0..<R {
                var sr: Float = 0, si: Float = 0
                for r in 0..<R {
                    let t = (r * q % R) * step
                    sr += vRe[r] * rootRe[t] - vIm[r] * rootIm[t]
                    si += vRe[r] * rootIm[t] + vIm[r] * rootRe[t]
                }
                wRe[q] = sr; wIm[q] = si
            }
        }
    }
}
