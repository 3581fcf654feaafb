// SlaneyMelFilterbank: librosa's `filters.mel(..., htk=False, norm="slaney")` triangles over the bins of a
// real FFT, stored sparsely (each triangle covers a handful of bins).
//
// librosa's arithmetic, step by step: bin frequencies k·sr/nFFT; n+2 edge frequencies evenly spaced on the
// Slaney mel scale (linear below 1 kHz at 200/3 Hz per mel, logarithmic above with step ln(6.4)/27);
// triangle i rises from edge i to edge i+1 and falls to edge i+2 (computed in double, stored as float),
// then is scaled by 2 / (edge[i+2] − edge[i]) (the area norm; float times double, rounded to float).
import Glibc

struct SlaneyMelFilterbank: Sendable {
    /// One triangle: weights for the bins firstBin..<firstBin + weights.count.
    struct Filter: Sendable {
        let firstBin: Int
        let weights: [Float]
    }

    let filters: [Filter]   // [melCount]
    let binCount: Int       // nFFT / 2 + 1

    init(sampleRate: Int, fftSize: Int, melCount: Int, minFrequency: Double, maxFrequency: Double) {
        let bins = fftSize / 2 + 1
        let binHz = 1.0 / (Double(fftSize) * (1.0 / Double(sampleRate)))  // numpy's rfftfreq step
        let lowMel = Self.hzToMel(minFrequency), highMel = Self.hzToMel(maxFrequency)
        let edgeCount = melCount + 2
        let step = (highMel - lowMel) / Double(edgeCount - 1)
        let edges: [Double] = (0..<edgeCount).map { i in
            Self.melToHz(i == edgeCount - 1 ? highMel : lowMel + Double(i) * step)  // linspace ends exactly
        }
        var filters: [Filter] = []
        filters.reserveCapacity(melCount)
        for i in 0..<melCount {
            let rise = edges[i + 1] - edges[i], fall = edges[i + 2] - edges[i + 1]
            let areaNorm = 2.0 / (edges[i + 2] - edges[i])
            var first = -1
            var weights: [Float] = []
            for k in 0..<bins {
                let f = Double(k) * binHz
                let lower = (f - edges[i]) / rise
                let upper = (edges[i + 2] - f) / fall
                let w = Float(max(0, min(lower, upper)))
                guard w > 0 else {
                    if first >= 0 { break }
                    continue
                }
                if first < 0 { first = k }
                weights.append(Float(Double(w) * areaNorm))
            }
            filters.append(Filter(firstBin: max(0, first), weights: weights))
        }
        self.filters = filters
        self.binCount = bins
    }

    /// mel[i] = Σ_k power[k] · filter_i[k] for every filter.
    func apply(power: UnsafePointer<Float>,  // [binCount]
               into mel: UnsafeMutablePointer<Float>) {  // [filters.count]
        for (i, f) in filters.enumerated() {
            var s: Float = 0
            f.weights.withUnsafeBufferPointer { w in
                let p = power + f.firstBin
                for k in 0..<w.count { s += p[k] * w[k] }
            }
            mel[i] = s
        }
    }

    // Slaney's scale (librosa hz_to_mel / mel_to_hz with htk=False).
    private static let linearHzPerMel = 200.0 / 3.0
    private static let logStartHz = 1000.0
    private static let logStartMel = logStartHz / linearHzPerMel
    private static let logStep = log(6.4) / 27.0

    static func hzToMel(_ f: Double) -> Double {
        f >= logStartHz ? logStartMel + log(f / logStartHz) / logStep : f / linearHzPerMel
    }

    static func melToHz(_ m: Double) -> Double {
        m >= logStartMel ? logStartHz * exp(logStep * (m - logStartMel)) : linearHzPerMel * m
    }
}
