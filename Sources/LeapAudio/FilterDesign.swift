// Kaiser-windowed sinc low-pass design for the resampler stages.
//
// Everything is computed in Double and rounded to Float once per coefficient. The Kaiser formulas
// (Kaiser 1974) give the window shape `beta` and the length needed for an attenuation of `A` dB over a
// transition band of width `df`: length = (A - 7.95) / (2.285 * 2 pi * df / fs).
import Glibc

/// How sharp and how deep the anti-aliasing filters are.
package struct ResamplerQuality: Sendable, Equatable {
    /// Passband edge as a fraction of the lower Nyquist frequency (libsoxr HQ uses 0.913).
    package var passband: Double
    /// Stopband attenuation (and passband ripple, which Kaiser windows make equal) in dB.
    package var attenuationDB: Double

    package init(passband: Double, attenuationDB: Double) {
        self.passband = passband
        self.attenuationDB = attenuationDB
    }

    /// The default: flat to 91% of the lower Nyquist, 130 dB down from it on.
    package static let high = ResamplerQuality(passband: 0.91, attenuationDB: 130)

    /// The quality of the short stages around the sharp one (half-band, polyphase): 10 dB deeper, since
    /// their passband ripple adds to the sharp stage's (at the sharp stage's own depth they cost the
    /// resampler tests' tone SNR several dB) and a short filter's extra taps are cheap.
    var shortStage: ResamplerQuality {
        ResamplerQuality(passband: passband, attenuationDB: attenuationDB + 10)
    }

    var kaiserBeta: Double {
        let a = attenuationDB
        if a > 50 { return 0.1102 * (a - 8.7) }
        if a >= 21 { return 0.5842 * pow(a - 21, 0.4) + 0.07886 * (a - 21) }
        return 0
    }

    /// Duration (seconds) of a filter with transition band `transitionHz` wide.
    func filterSeconds(transitionHz: Double) -> Double {
        (attenuationDB - 7.95) / (2.285 * 2 * Double.pi * transitionHz)
    }
}

/// Modified Bessel function of the first kind, order 0 (power series; converges fast for x < 50).
func besselI0(_ x: Double) -> Double {
    let q = x * x / 4
    var term = 1.0, sum = 1.0, k = 1.0
    while term > sum * 1e-18 {
        term *= q / (k * k)
        sum += term
        k += 1
    }
    return sum
}

/// Kaiser window at position `u` in [-1, 1] (0 outside).
func kaiser(_ u: Double, beta: Double, i0Beta: Double) -> Double {
    if abs(u) > 1 { return 0 }
    return besselI0(beta * (1 - u * u).squareRoot()) / i0Beta
}

func sinc(_ x: Double) -> Double {
    if x == 0 { return 1 }
    let px = Double.pi * x
    return sin(px) / px
}

/// Filter table of a polyphase stage: `rows` filters of `taps` coefficients (zero padded to a multiple of 8),
/// row r for fractional input position r / `rowDenominator`. The storage never moves (the C kernel holds
/// a pointer to it).
package final class PolyphaseTable: @unchecked Sendable {
    let coefficients: UnsafeMutablePointer<Float>  // [rows, taps]
    let rows: Int
    let taps: Int              // padded length, multiple of 8
    let halfLength: Int        // filter support is (-halfLength, halfLength) input samples

    /// - cutoff: centre of the transition band in cycles per input sample.
    init(rows: Int, rowDenominator: Int, halfLength: Int, cutoff: Double, beta: Double) {
        let used = 2 * halfLength
        let taps = (used + 7) / 8 * 8
        let table = allocateAlignedFloats(rows * taps)
        table.initialize(repeating: 0, count: rows * taps)
        let window = KaiserWindow(beta: beta)
        var row = [Double](repeating: 0, count: used)
        var windowAt = [Double](repeating: 0, count: used)   // window position of each tap, then its value
        let w = 2 * Double.pi * cutoff
        for r in 0..<rows {
            // h is even, so row (D - r) is row r reversed: compute the first half, mirror the rest.
            let mirror = rowDenominator - r
            if mirror < r && mirror >= 0 && mirror < rows {
                for j in 0..<used { table[r * taps + j] = table[mirror * taps + used - 1 - j] }
                continue
            }
            let frac = Double(r) / Double(rowDenominator)
            // sin(w t) for t = t0, t0 - 1, ... by rotation (one sin/cos per row, error ~1e-16 per step).
            let t0 = frac + Double(halfLength - 1)
            var sv = sin(w * t0), cv = cos(w * t0)
            let sb = sin(w), cb = cos(w)
            for j in 0..<used {
                let t = t0 - Double(j)
                row[j] = abs(t) < 1e-12 ? w / Double.pi : sv / (Double.pi * t)
                windowAt[j] = t / Double(halfLength)
                (sv, cv) = (sv * cb - cv * sb, cv * cb + sv * sb)
            }
            window.evaluate(&windowAt)
            var sum = 0.0
            for j in 0..<used {
                row[j] *= windowAt[j]
                sum += row[j]
            }
            // Unity DC gain in every phase: no phase-dependent gain ripple (a source of imaging noise).
            for j in 0..<used { table[r * taps + j] = Float(row[j] / sum) }
        }
        self.coefficients = table
        self.rows = rows
        self.taps = taps
        self.halfLength = halfLength
    }

    deinit { coefficients.deallocate() }
}

/// Kaiser window with the Bessel series' reciprocal factors precomputed.
struct KaiserWindow {
    let beta: Double
    let inverseI0Beta: Double
    let inverseSquares: [Double]  // 1 / k^2, as many terms as the series needs at x = beta

    init(beta: Double) {
        self.beta = beta
        self.inverseI0Beta = 1 / besselI0(beta)
        // Terms until the largest argument's term is below 1e-17 (absolute; I0 >= 1): then every smaller
        // argument has converged too, so all positions can run the same number of terms.
        var factors: [Double] = []
        let q = beta * beta / 4
        var term = 1.0, k = 1
        while term >= 1e-17 && k <= 200 {
            factors.append(1 / Double(k * k))
            term *= q / Double(k * k)
            k += 1
        }
        self.inverseSquares = factors
    }

    /// Replaces each position u (|u| <= 1 gives the window, 0 outside) by w(u). The series runs over 8
    /// positions at once, term by term: independent vector multiply-adds, where one position at a time is
    /// a chain of dependent multiplies (odd rates need thousands of phases, so the design time is seen as
    /// the first call's cost in `leap-bench audio`).
    func evaluate(_ positions: inout [Double]) {
        typealias Lanes = SIMD8<Double>
        positions.withUnsafeMutableBufferPointer { p in
            var start = 0
            while start < p.count {
                let count = min(Lanes.scalarCount, p.count - start)
                var u = Lanes(repeating: 1)
                for l in 0..<count { u[l] = p[start + l] }
                let x2 = (beta * beta) * (1 - u * u).replacing(with: 0, where: u * u .> 1)
                let q = x2 * 0.25
                var term = Lanes(repeating: 1), sum = Lanes(repeating: 1)
                for factor in inverseSquares {
                    term *= q * factor
                    sum += term
                }
                for l in 0..<count { p[start + l] = abs(u[l]) > 1 ? 0 : sum[l] * inverseI0Beta }
                start += count
            }
        }
    }
}

/// One-sided taps of a half-band decimator: h[k] multiplies x[2n - 2k - 1] + x[2n + 2k + 1]; the centre
/// tap is 0.5 and every other even-offset tap is zero.
func halfbandTaps(inputRate: Double, passbandEdgeHz: Double, quality: ResamplerQuality) -> [Float] {
    // Pass [0, F], stop from fin/2 - F: a half-band filter is symmetric about fin/4.
    let transition = inputRate / 2 - 2 * passbandEdgeHz
    let halfSpan = quality.filterSeconds(transitionHz: transition) * inputRate / 2
    let count = max(1, Int((halfSpan / 2).rounded(.up)))
    let beta = quality.kaiserBeta, i0Beta = besselI0(beta)
    var h = [Double](repeating: 0, count: count)
    for k in 0..<count {
        let t = Double(2 * k + 1)
        h[k] = 0.5 * sinc(t / 2) * kaiser(t / Double(2 * count), beta: beta, i0Beta: i0Beta)
    }
    // DC gain exactly 1: the side taps sum to 0.5.
    let sum = h.reduce(0, +) * 2
    return h.map { Float($0 * 0.5 / sum) }
}
