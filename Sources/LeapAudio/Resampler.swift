// Band-limited sample-rate conversion, streaming.
//
// Design (libsoxr-like). The steep anti-aliasing filter (flat to 91% of the lower Nyquist frequency, 130 dB
// down from it on) runs as an FFT overlap-save stage, where its length costs little. Going down, half-band
// decimators first halve the rate while it is at least 2.5x the output rate; going up, the FFT stage also
// doubles the rate. The signal is then oversampled, so a short polyphase windowed-sinc stage (140 dB) does
// the fractional ratio: the ratio reduced to L/M picks a table of L phases when it is small enough (exact
// for all common rates), otherwise 2049 phases with linear interpolation between adjacent ones (error below
// -140 dB). All filters are zero phase: output k is the input's band-limited value at time k / outputRate,
// so a tone comes out exactly aligned, and chunked processing gives the same samples as one call (the state
// is integer positions plus pending input; FFT blocks are placed by absolute position, and which lane or
// batch a block runs in does not change its result).
//
// Each stage writes straight into the next stage's input queue (`SampleQueue`), long inputs go through in
// pieces so that those queues stay small, and the result is written in place into the returned array.
import LeapCore

package final class Resampler {
    package let inputRate: Int
    package let outputRate: Int
    var halfbands: [HalfbandStage] = []
    var sharp: FFTFilterStage?        // nil when the rates are equal
    var sharpHalfLength = 0
    var polyphase: PolyphaseStage?    // nil when the sharp stage already produces the output rate
    var inputCount = 0
    var outputCount = 0
    // Each stage writes into the next one's input queue; these are the outputs of half-band stages
    // followed by another half-band stage (whose input is de-interleaved), and the result.
    var halfbandOutputs: [SampleQueue] = []
    let output = SampleQueue()

    /// Rates accepted by the resampler (Hz).
    package static let rateRange = 1...1_000_000

    package init(inputRate: Int, outputRate: Int, quality: ResamplerQuality = .high) throws {
        for (name, rate) in [("input", inputRate), ("output", outputRate)] where !Resampler.rateRange.contains(rate) {
            throw LeapError(.invalidArgument, "\(name) sample rate \(rate) Hz is out of range (1...1000000)")
        }
        self.inputRate = inputRate
        self.outputRate = outputRate
        if inputRate == outputRate { return }
        let beta = quality.kaiserBeta
        if inputRate > outputRate {
            // Down: halve cheaply while the rate is >= 2.5x the output rate, then band-limit sharply to
            // [0, out/2) at that rate (FFT), then a short polyphase filter (the signal is now oversampled:
            // pass [0, out/2], stop from rate - out/2).
            var rate = inputRate
            while rate % 2 == 0 && 2 * rate >= 5 * outputRate {
                halfbands.append(HalfbandStage(taps: halfbandTaps(
                    inputRate: Double(rate), passbandEdgeHz: Double(outputRate) / 2, quality: quality.shortStage)))
                rate /= 2
            }
            halfbandOutputs = (0..<max(0, halfbands.count - 1)).map { _ in SampleQueue() }
            let nyquist = Double(outputRate) / 2
            let passEdge = quality.passband * nyquist
            sharpHalfLength = Resampler.halfLength(quality.filterSeconds(transitionHz: nyquist - passEdge), rate: rate)
            guard sharpHalfLength <= Resampler.maxHalfLength else {
                throw LeapError(.invalidArgument,
                    "resampling \(inputRate) Hz to \(outputRate) Hz would need a \(2 * sharpHalfLength)-tap filter; ratios this extreme are not supported (at most \(2 * Resampler.maxHalfLength) taps)")
            }
            let table = PolyphaseTable(rows: 1, rowDenominator: 1, halfLength: sharpHalfLength,
                                       cutoff: (passEdge + nyquist) / 2 / Double(rate), beta: beta)
            if rate == 2 * outputRate {
                // An exact 2:1 step: the FFT stage keeps every other output itself (the sharp filter
                // already rejects everything that would alias), no polyphase stage.
                sharp = FFTFilterStage(table: table, upsample: 1, decimate: 2)
            } else {
                sharp = FFTFilterStage(table: table, upsample: 1)
                polyphase = Resampler.makePolyphase(from: rate, to: outputRate, passEdge: passEdge,
                                                       contentEdge: nyquist, quality: quality)
            }
        } else {
            // Up: band-limit sharply to [0, in/2) while doubling the rate (FFT, two phases), then a short
            // polyphase filter from 2x the input rate (pass [0, in/2], stop from 1.5x the input rate).
            let nyquist = Double(inputRate) / 2
            let passEdge = quality.passband * nyquist
            sharpHalfLength = Resampler.halfLength(quality.filterSeconds(transitionHz: nyquist - passEdge), rate: inputRate)
            let table = PolyphaseTable(rows: 2, rowDenominator: 2, halfLength: sharpHalfLength,
                                       cutoff: (passEdge + nyquist) / 2 / Double(inputRate), beta: beta)
            sharp = FFTFilterStage(table: table, upsample: 2)
            if 2 * inputRate != outputRate {
                polyphase = Resampler.makePolyphase(from: 2 * inputRate, to: outputRate, passEdge: passEdge,
                                                       contentEdge: nyquist, quality: quality)
            }
        }
        reserveQueues()
    }

    /// Sizes the stage queues for a whole piece up front (growing them by copies mid-stream costs more).
    private func reserveQueues() {
        guard let sharp else { return }
        var piece = Resampler.pieceSize
        for (i, halfband) in halfbands.enumerated() {
            piece /= 2
            for queue in [halfband.even, halfband.odd] { queue.reserveCapacity(piece + 2 * halfband.taps.count + 2) }
            if i < halfbandOutputs.count { halfbandOutputs[i].reserveCapacity(piece + halfband.taps.count + 2) }
        }
        // The sharp stage may hold back up to a batch of pairs between pieces.
        let heldBack = 2 * FFTFilterStage.lanes * sharp.blockOutputs + sharp.pairSpan
        sharp.buffer.reserveCapacity(piece + heldBack)
        polyphase?.buffer.reserveCapacity(sharp.upsample * (piece + heldBack) + sharp.taps)
    }

    /// Bound on the steep filter (memory and time grow with it): reached only by extreme down-sampling
    /// from odd rates (e.g. 999983 Hz -> 1 kHz), which no input path needs.
    static let maxHalfLength = 16_384

    static func halfLength(_ seconds: Double, rate: Int) -> Int { max(2, Int((seconds * Double(rate) / 2).rounded(.up))) }

    static func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }

    /// Largest exact phase table (rows x taps, floats); beyond it phases are interpolated.
    static let maxExactTableSize = 1 << 20
    static let interpolatedPhases = 2048

    /// The polyphase stage for a signal band-limited to `contentEdge` Hz whose passband ends at `passEdge`:
    /// flat to `passEdge` (above it is the sharp stage's transition band, where flatness does not matter),
    /// images (which start at fin - contentEdge) rejected.
    static func makePolyphase(from fin: Int, to fout: Int, passEdge: Double, contentEdge: Double,
                              quality q: ResamplerQuality) -> PolyphaseStage {
        let quality = q.shortStage
        let g = gcd(fin, fout)
        let l = fout / g, m = fin / g
        let stopEdge = Double(fin) - contentEdge
        let halfLength = halfLength(quality.filterSeconds(transitionHz: stopEdge - passEdge), rate: fin)
        let cutoff = (passEdge + stopEdge) / 2 / Double(fin)
        let exact = l * 2 * halfLength <= maxExactTableSize
        let beta = quality.kaiserBeta
        let key = PolyphaseDesignKey(numerator: m, denominator: l, halfLength: halfLength,
                                     cutoffBits: cutoff.bitPattern, betaBits: beta.bitPattern)
        let design = PolyphaseDesignCache.shared.design(key) {
            let table = PolyphaseTable(
                rows: exact ? l : interpolatedPhases + 1, rowDenominator: exact ? l : interpolatedPhases,
                halfLength: halfLength, cutoff: cutoff, beta: beta)
            return PolyphaseDesign(table: table, numerator: m, denominator: l, interpolatedRows: exact ? 0 : interpolatedPhases)
        }
        return PolyphaseStage(design: design)
    }

    /// Outputs a stream of `n` input samples has in total: those at times k / out < n / in.
    package func totalOutputs(forInputCount n: Int) -> Int {
        let g = Resampler.gcd(inputRate, outputRate)
        let l = outputRate / g, m = inputRate / g
        let (hi, lo) = n.multipliedFullWidth(by: l)
        guard hi == 0, lo < UInt(Int.max) - UInt(m) else { return Int.max }
        return (Int(lo) + m - 1) / m
    }

    /// Input is fed through the stages in pieces of this many samples, so that their buffers stay small
    /// however long the input is, yet big enough to fill the FFT stage's 16-lane batches (results do not
    /// depend on it).
    static let pieceSize = 1 << 17

    /// Converts the next chunk of input; returns the outputs it completes (the rest come with later chunks
    /// or `flush`).
    package func process(_ input: UnsafeBufferPointer<Float>) -> [Float] {
        guard sharp != nil else {
            inputCount += input.count
            return Array(input)
        }
        // Outputs go straight into the returned array, sized for everything the stream can still produce
        // (so that appending `flush()`'s outputs does not reallocate either) plus what the polyphase
        // kernel may write past the outputs it keeps.
        let remaining = totalOutputs(forInputCount: inputCount + input.count) - outputCount
        guard remaining < Int.max / 2 else {
            processPieces(input)
            return takeOutput()
        }
        var spilled = false
        let result = [Float](unsafeUninitializedCapacity: remaining + outputSlack) { buffer, initialized in
            output.borrow(buffer)
            processPieces(input)
            if let n = output.endBorrowing() { initialized = n } else { spilled = true }
        }
        return spilled ? takeOutput() : result
    }

    /// Outputs the polyphase kernel may write beyond those it keeps (it writes whole groups).
    var outputSlack: Int { 64 + (polyphase.map { $0.maxOutputs(available: $0.windowLength) } ?? 0) }

    /// Runs `input` through the stages, in pieces, appending to `output`.
    private func processPieces(_ input: UnsafeBufferPointer<Float>) {
        let before = output.count
        var start = 0
        while start < input.count {
            let end = min(input.count, start + Resampler.pieceSize)
            inputCount += end - start
            // Pieces are internal: only the call's last one runs a partial FFT batch.
            runStages(UnsafeBufferPointer(rebasing: input[start..<end]), finishing: false, lastPiece: end == input.count)
            start = end
        }
        outputCount += output.count - before
    }

    /// Feeds `input` through every stage into `output`; `finishing` ends each stage's stream after it (the
    /// polyphase stage then stops at the stream's total output count). Each stage writes straight into the
    /// next one's input queue.
    private func runStages(_ input: UnsafeBufferPointer<Float>, finishing: Bool, lastPiece: Bool = true) {
        guard let sharp else { return }
        let sharpInput = sharp.buffer, sharpBefore = sharpInput.count
        if halfbands.isEmpty {
            sharpInput.append(input)
        } else {
            var current = input
            for i in halfbands.indices {
                let last = i == halfbands.count - 1
                let next = last ? sharpInput : halfbandOutputs[i]
                if !last { next.removeAll() }
                if !current.isEmpty { halfbands[i].process(current, into: next) }
                if finishing { halfbands[i].finish(into: next) }
                current = UnsafeBufferPointer(start: next.samples, count: next.count)
            }
        }
        let remaining = finishing ? max(0, totalOutputs(forInputCount: inputCount) - outputCount) : 0
        let sharpDestination = polyphase?.buffer ?? output
        sharp.received(sharpInput.count - sharpBefore, into: sharpDestination, fullBatchesOnly: !lastPiece)
        if finishing {
            sharp.finish(halfLength: sharpHalfLength, into: sharpDestination)
            if polyphase == nil { output.dropLast(output.count - min(output.count, remaining)) }
        }
        guard let polyphase else { return }
        if finishing {
            polyphase.received(into: output, limit: remaining)
            polyphase.finish(producing: remaining - output.count, into: output)
        } else {
            polyphase.received(into: output)
        }
    }

    private func takeOutput() -> [Float] {
        let result = Array(UnsafeBufferPointer(start: output.samples, count: output.count))
        output.removeAll()
        return result
    }

    package func process(_ input: [Float]) -> [Float] {
        input.withUnsafeBufferPointer { process($0) }
    }

    /// Ends the stream: returns the remaining outputs, so that the total is `totalOutputs(forInputCount:)`.
    /// A flushed resampler is finished; use a new one for the next stream.
    package func flush() -> [Float] {
        guard sharp != nil else { return [] }
        output.removeAll()
        runStages(UnsafeBufferPointer(start: nil, count: 0), finishing: true)
        outputCount += output.count
        return takeOutput()
    }

    /// One-shot conversion of a whole signal.
    package static func resample(_ input: [Float], from inputRate: Int, to outputRate: Int,
                                 quality: ResamplerQuality = .high) throws -> [Float] {
        let r = try Resampler(inputRate: inputRate, outputRate: outputRate, quality: quality)
        var out = r.process(input)
        out.append(contentsOf: r.flush())
        return out
    }
}
