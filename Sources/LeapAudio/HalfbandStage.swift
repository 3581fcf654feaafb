// A streaming half-band decimator (rate / 2). Half of its taps are zero and the rest are symmetric, so
// splitting the input into even and odd samples turns it into a few contiguous multiply-adds per output.
import CLeapKernels

struct HalfbandStage {
    let taps: [Float]        // one side: taps[k] weighs x[2n - 2k - 1] + x[2n + 2k + 1]
    var even: [Float]        // x[2i], from logical index -taps.count on (silence before the start)
    var odd: [Float]         // x[2i + 1], likewise
    var nextIsOdd = false    // parity of the next input sample
    var inputCount = 0
    var outputCount = 0

    init(taps: [Float]) {
        self.taps = taps
        self.even = [Float](repeating: 0, count: taps.count)
        self.odd = [Float](repeating: 0, count: taps.count)
    }

    mutating func process(_ input: UnsafeBufferPointer<Float>, into out: inout [Float]) {
        inputCount += input.count
        var i = 0
        if nextIsOdd, i < input.count {
            odd.append(input[i])
            i += 1
            nextIsOdd = false
        }
        let pairs = (input.count - i) / 2
        if pairs > 0 {
            let e0 = even.count, o0 = odd.count
            even.append(contentsOf: repeatElement(0, count: pairs))
            odd.append(contentsOf: repeatElement(0, count: pairs))
            even.withUnsafeMutableBufferPointer { e in
                odd.withUnsafeMutableBufferPointer { o in
                    lk_audio_deinterleave2(input.baseAddress! + i, pairs, e.baseAddress! + e0, o.baseAddress! + o0)
                }
            }
            i += 2 * pairs
        }
        if i < input.count {
            even.append(input[i])
            nextIsOdd = true
        }
        run(into: &out, limit: Int.max)
    }

    private mutating func run(into out: inout [Float], limit: Int) {
        let n = taps.count
        let count = min(limit, even.count - n, odd.count - 2 * n)
        if count <= 0 { return }
        let start = out.count
        out.append(contentsOf: repeatElement(0, count: count))
        even.withUnsafeBufferPointer { e in
            odd.withUnsafeBufferPointer { o in
                taps.withUnsafeBufferPointer { h in
                    out.withUnsafeMutableBufferPointer { y in
                        lk_audio_halfband_run(e.baseAddress, o.baseAddress, h.baseAddress, n, y.baseAddress! + start, count)
                    }
                }
            }
        }
        even.removeFirst(count)
        odd.removeFirst(count)
        outputCount += count
    }

    /// Ends the stream: the outputs covering the input plus the filter's tail (input followed by silence).
    mutating func finish(into out: inout [Float]) {
        let total = (inputCount + 1) / 2 + taps.count
        let remaining = total - outputCount
        if remaining <= 0 { return }
        even.append(contentsOf: repeatElement(0, count: remaining + taps.count))
        odd.append(contentsOf: repeatElement(0, count: remaining + 2 * taps.count))
        run(into: &out, limit: remaining)
    }
}
