// A streaming half-band decimator (rate / 2). Half of its taps are zero and the rest are symmetric, so
// splitting the input into even and odd samples turns it into a few contiguous multiply-adds per output.
import CLeapMediaKernels

final class HalfbandStage {
    let taps: [Float]        // one side: taps[k] weighs x[2n - 2k - 1] + x[2n + 2k + 1]
    let even = SampleQueue() // x[2i], from logical index -taps.count on (silence before the start)
    let odd = SampleQueue()  // x[2i + 1], likewise
    var nextIsOdd = false    // parity of the next input sample
    var inputCount = 0
    var outputCount = 0

    init(taps: [Float]) {
        self.taps = taps
        even.appendZeros(taps.count)
        odd.appendZeros(taps.count)
    }

    func process(_ input: UnsafeBufferPointer<Float>, into out: SampleQueue) {
        guard let x = input.baseAddress else { return }
        inputCount += input.count
        var i = 0
        if nextIsOdd, i < input.count {
            odd.reserve(1).pointee = x[i]
            odd.commit(1)
            i += 1
            nextIsOdd = false
        }
        let pairs = (input.count - i) / 2
        if pairs > 0 {
            lk_audio_deinterleave2(x + i, pairs, even.reserve(pairs), odd.reserve(pairs))
            even.commit(pairs)
            odd.commit(pairs)
            i += 2 * pairs
        }
        if i < input.count {
            even.reserve(1).pointee = x[i]
            even.commit(1)
            nextIsOdd = true
        }
        run(into: out, limit: Int.max)
    }

    private func run(into out: SampleQueue, limit: Int) {
        let n = taps.count
        let count = min(limit, even.count - n, odd.count - 2 * n)
        if count <= 0 { return }
        taps.withUnsafeBufferPointer { h in
            lk_audio_halfband_run(even.samples, odd.samples, h.baseAddress, n, out.reserve(count), count)
        }
        out.commit(count)
        even.drop(count)
        odd.drop(count)
        outputCount += count
    }

    /// Ends the stream: the outputs covering the input plus the filter's tail (input followed by silence).
    func finish(into out: SampleQueue) {
        let total = (inputCount + 1) / 2 + taps.count
        let remaining = total - outputCount
        if remaining <= 0 { return }
        even.appendZeros(remaining + taps.count)
        odd.appendZeros(remaining + 2 * taps.count)
        run(into: out, limit: remaining)
    }
}
