// AudioCodeSampler: draws one audio code from a codebook's logits, as liquid-audio's `_sample_audio_frame`:
//
//   greedy (first index of the largest logit) when temperature is nil or <= 0, or top_k == 1;
//   otherwise logits / temperature, top-k keeping ties (every logit below the k-th largest becomes -inf),
//   softmax, and a multinomial draw from the sampler's own seeded RNG (xoshiro256**, LeapSampling).
//
// Liquid's llama.cpp runner applies temperature then top-k then the draw (llama_sampler temp → top_k →
// dist): the same distribution, since dividing by a positive temperature keeps the order.
import Glibc
import LeapCore
import LeapSampling

package struct AudioSamplingParams: Sendable, Equatable {
    /// nil or <= 0: greedy.
    package var temperature: Float?
    /// nil or <= 0: no top-k stage; 1: greedy.
    package var topK: Int?
    package var seed: UInt64

    package init(temperature: Float?, topK: Int?, seed: UInt64 = 0) {
        self.temperature = temperature
        self.topK = topK
        self.seed = seed
    }

    package static let greedy = AudioSamplingParams(temperature: nil, topK: nil)

    package var isGreedy: Bool {
        guard let t = temperature, t > 0 else { return true }
        return topK == 1
    }
}

package struct AudioCodeSampler {
    package let params: AudioSamplingParams
    private var rng: Xoshiro256StarStar
    private var work: [Double] = []   // [n] tempered, masked logits → probabilities

    package init(_ params: AudioSamplingParams) {
        self.params = params
        rng = Xoshiro256StarStar(seed: params.seed)
    }

    /// Restarts the RNG from the seed.
    package mutating func reset() { rng = Xoshiro256StarStar(seed: params.seed) }

    /// One code drawn from `logits` (at least one finite value; NaN counts as -inf).
    package mutating func sample(_ logits: UnsafeBufferPointer<Float>) throws -> Int32 {
        guard !logits.isEmpty else { throw LeapError.invalidArgument("audio code logits are empty") }
        if params.isGreedy { return try Self.argmax(logits) }
        let n = logits.count
        let t = Double(params.temperature ?? 1)
        if work.count != n { work = [Double](repeating: 0, count: n) }
        var threshold = -Double.infinity
        if let k = params.topK, k > 0, k < n {
            threshold = Double(kthLargest(logits, k))
        }
        var m = -Double.infinity
        for i in 0..<n {
            let l = Double(logits[i])
            work[i] = (l.isNaN || l < threshold) ? -.infinity : l / t
            m = max(m, work[i])
        }
        guard m.isFinite else { throw LeapError.invalidArgument("audio code logits have no finite value") }
        var sum = 0.0
        for i in 0..<n {
            work[i] = work[i] == -.infinity ? 0 : exp(work[i] - m)
            sum += work[i]
        }
        let u = rng.nextUnitDouble() * sum
        var acc = 0.0
        var last = 0
        for i in 0..<n where work[i] > 0 {
            acc += work[i]
            last = i
            if u < acc { return Int32(i) }
        }
        return Int32(last)  // u rounded onto the total
    }

    /// The first index of the largest value (torch.argmax).
    static func argmax(_ logits: UnsafeBufferPointer<Float>) throws -> Int32 {
        var best = -1
        var bestValue = -Float.infinity
        for (i, v) in logits.enumerated() where !v.isNaN && (best < 0 || v > bestValue) {
            best = i
            bestValue = v
        }
        guard best >= 0 else { throw LeapError.invalidArgument("audio code logits are all NaN") }
        return Int32(best)
    }

    /// The k-th largest value (torch.topk(logits, k).values[-1]); NaN sorts lowest.
    private func kthLargest(_ logits: UnsafeBufferPointer<Float>, _ k: Int) -> Float {
        var top = [Float](repeating: -.infinity, count: k)  // descending
        for v in logits where !v.isNaN && v > top[k - 1] {
            var j = k - 1
            while j > 0 && top[j - 1] < v {
                top[j] = top[j - 1]
                j -= 1
            }
            top[j] = v
        }
        return top[k - 1]
    }
}
