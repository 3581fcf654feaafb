// Log-probabilities of tokens under the model's own distribution: log_softmax of the raw logits, before
// the constraint mask, the penalties, top-k / top-p / min-p and the temperature (as OpenAI and vLLM report
// them by default), so that they say what the model thinks of a token, not what the sampler did with it.
//
//   logprob(t) = logit[t] - log(sum_j exp(logit[j]))      computed as  (logit[t] - m) - log(sum_j exp(logit[j] - m))
//
// with m = max_j logit[j], so that no exp overflows and large logits keep their precision. One pass for the max, one for the sum, and a pass with
// an n-element min-heap for the n most likely tokens (n is at most 20: no sort of the vocabulary).
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One token and its log-probability.
package struct TokenLogprob: Sendable, Equatable {
    package var token: Int32
    package var logprob: Float
    package init(token: Int32, logprob: Float) {
        self.token = token
        self.logprob = logprob
    }
}

/// The log-normalizer and the most likely tokens of one row of logits.
package struct LogitDistribution: Sendable, Equatable {
    /// The largest logit, and log(sum_j exp(logit[j] - maxLogit)); -infinity when every logit is -infinity.
    package var maxLogit: Float
    package var logSum: Float
    /// The `top` most likely tokens, most likely first (ties: the lower id first).
    package var top: [TokenLogprob]

    /// Reads `logits` ([n_vocab], finite or -infinity) for `top` alternatives (0...n_vocab).
    package init(logits: UnsafeBufferPointer<Float>, top n: Int) {
        var m = -Float.infinity
        for l in logits where l > m { m = l }
        maxLogit = m
        guard m > -.infinity else {
            logSum = -.infinity
            top = []
            return
        }
        var sum: Double = 0
        for l in logits { sum += Double(expf(l - m)) }
        let logSum = Float(log(sum))
        self.logSum = logSum
        let k = min(max(n, 0), logits.count)
        guard k > 0 else {
            top = []
            return
        }
        // heap[0] is the least likely of the k kept so far ("less likely": smaller logit, or same logit and a
        // larger id, so that the lower id wins a tie).
        var heap: [Int32] = []
        heap.reserveCapacity(k)
        func lessLikely(_ a: Int32, _ b: Int32) -> Bool {
            let la = logits[Int(a)], lb = logits[Int(b)]
            return la < lb || (la == lb && a > b)
        }
        func siftDown(_ start: Int) {
            var i = start
            while true {
                let l = 2 * i + 1, r = l + 1
                var least = i
                if l < heap.count && lessLikely(heap[l], heap[least]) { least = l }
                if r < heap.count && lessLikely(heap[r], heap[least]) { least = r }
                if least == i { return }
                heap.swapAt(i, least)
                i = least
            }
        }
        for id in 0..<Int32(logits.count) {
            if heap.count < k {
                heap.append(id)
                var i = heap.count - 1
                while i > 0 {
                    let parent = (i - 1) / 2
                    guard lessLikely(heap[i], heap[parent]) else { break }
                    heap.swapAt(i, parent)
                    i = parent
                }
            } else if lessLikely(heap[0], id) {
                heap[0] = id
                siftDown(0)
            }
        }
        top = heap.sorted { lessLikely($1, $0) }.map { TokenLogprob(token: $0, logprob: (logits[Int($0)] - m) - logSum) }
    }

    /// The log-probability of `token` in this distribution.
    package func logprob(of token: Int32, in logits: UnsafeBufferPointer<Float>) -> Float {
        (logits[Int(token)] - maxLogit) - logSum
    }
}
