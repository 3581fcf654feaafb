// Band-limited sample-rate conversion, streaming.
//
// Design: while the input rate is more than 2.2x the output rate, half-band decimators halve it cheaply;
// one polyphase windowed-sinc stage then converts the rest. The ratio out/in reduced to L/M picks a table of
// L filter phases when L is small enough (exact for all common rates); otherwise 2049 phases with linear
// interpolation between adjacent ones (error below -130 dB). All filters are zero phase: output k is the
// input's band-limited value at time k / outputRate, so a tone comes out exactly aligned, and chunked
// processing gives the same samples as one call (the state is integer positions plus pending input).
import LeapCore

package struct Resampler {
    package let inputRate: Int
    package let outputRate: Int
    var halfbands: [HalfbandStage]
    var polyphase: PolyphaseStage?   // nil when the rates are equal
    var inputCount = 0
    var outputCount = 0

    /// Rates accepted by the resampler (Hz).
    package static let rateRange = 1...1_000_000

    package init(inputRate: Int, outputRate: Int, quality: ResamplerQuality = .high) throws {
        for (name, rate) in [("input", inputRate), ("output", outputRate)] where !Resampler.rateRange.contains(rate) {
            throw LeapError(.invalidArgument, "\(name) sample rate \(rate) Hz is out of range (1...1000000)")
        }
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.halfbands = []
        if inputRate == outputRate {
            self.polyphase = nil
            return
        }
        // Half-band stages: pass [0, out/2], reject what would alias into it.
        var rate = inputRate
        while rate % 2 == 0 && Double(rate) > 2.2 * Double(outputRate) {
            halfbands.append(HalfbandStage(taps: halfbandTaps(
                inputRate: Double(rate), passbandEdgeHz: Double(outputRate) / 2, quality: quality)))
            rate /= 2
        }
        self.polyphase = Resampler.makePolyphase(from: rate, to: outputRate, quality: quality)
    }

    static func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }

    /// Largest phase count stored as an exact table; beyond it phases are interpolated.
    static let maxExactPhases = 4096
    static let interpolatedPhases = 2048

    static func makePolyphase(from fin: Int, to fout: Int, quality: ResamplerQuality) -> PolyphaseStage {
        let g = gcd(fin, fout)
        let l = fout / g, m = fin / g
        let nyquist = Double(min(fin, fout)) / 2
        let passEdge = quality.passband * nyquist
        let seconds = quality.filterSeconds(transitionHz: nyquist - passEdge)
        let halfLength = max(2, Int((seconds * Double(fin) / 2).rounded(.up)))
        let cutoff = (passEdge + nyquist) / 2 / Double(fin)
        let exact = l <= maxExactPhases
        let table = PolyphaseTable(
            rows: exact ? l : interpolatedPhases + 1, rowDenominator: exact ? l : interpolatedPhases,
            halfLength: halfLength, cutoff: cutoff, beta: quality.kaiserBeta)
        return PolyphaseStage(table: table, numerator: m, denominator: l, interpolatedRows: exact ? 0 : interpolatedPhases)
    }

    /// Outputs a stream of `n` input samples has in total: those at times k / out < n / in.
    package func totalOutputs(forInputCount n: Int) -> Int {
        let g = Resampler.gcd(inputRate, outputRate)
        let l = outputRate / g, m = inputRate / g
        let (hi, lo) = n.multipliedFullWidth(by: l)
        guard hi == 0, lo < UInt(Int.max) - UInt(m) else { return Int.max }
        return (Int(lo) + m - 1) / m
    }

    /// Converts the next chunk of input; returns the outputs it completes (the rest come with later chunks
    /// or `flush`).
    package mutating func process(_ input: UnsafeBufferPointer<Float>) -> [Float] {
        inputCount += input.count
        guard var poly = polyphase else { return Array(input) }
        var current = Array(input)
        for i in halfbands.indices {
            var next: [Float] = []
            next.reserveCapacity(current.count / 2 + 16)
            current.withUnsafeBufferPointer { halfbands[i].process($0, into: &next) }
            current = next
        }
        var out: [Float] = []
        out.reserveCapacity(poly.maxOutputs(available: current.count))
        current.withUnsafeBufferPointer { poly.process($0, into: &out) }
        polyphase = poly
        outputCount += out.count
        return out
    }

    package mutating func process(_ input: [Float]) -> [Float] {
        input.withUnsafeBufferPointer { process($0) }
    }

    /// Ends the stream: returns the remaining outputs, so that the total is `totalOutputs(forInputCount:)`.
    /// The resampler can then be reused for a new stream only after `reset()`.
    package mutating func flush() -> [Float] {
        guard var poly = polyphase else { return [] }
        var current: [Float] = []
        for i in halfbands.indices {
            var next: [Float] = []
            if !current.isEmpty { current.withUnsafeBufferPointer { halfbands[i].process($0, into: &next) } }
            halfbands[i].finish(into: &next)
            current = next
        }
        let total = totalOutputs(forInputCount: inputCount)
        var out: [Float] = []
        current.withUnsafeBufferPointer { poly.process($0, into: &out, limit: total - outputCount) }
        poly.finish(producing: total - outputCount - out.count, into: &out)
        polyphase = poly
        outputCount += out.count
        return out
    }

    /// One-shot conversion of a whole signal.
    package static func resample(_ input: [Float], from inputRate: Int, to outputRate: Int,
                                 quality: ResamplerQuality = .high) throws -> [Float] {
        var r = try Resampler(inputRate: inputRate, outputRate: outputRate, quality: quality)
        var out = r.process(input)
        out.append(contentsOf: r.flush())
        return out
    }
}
