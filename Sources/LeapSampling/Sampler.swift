// The sampler: turns one row of logits into the next token, with llama.cpp's chain and semantics
// (llama-cpp-python's order, which is llama.cpp common's with the unused stages removed):
//
//   logit mask (hook) → penalties → top-k → top-p → min-p → temperature → draw
//
// Top-k, top-p and min-p see the *un-tempered* (but penalised) logits; temperature only shapes the final
// draw. Temperature <= 0 is greedy: the first token with the largest penalised, masked logit.
//
// Cost on a 262k vocabulary: one copy of the logits, then top-k is a single pass with a k-element min-heap
// (no sort of the vocabulary); top-p without top-k sorts a growing prefix found by partial selection.
// All buffers are allocated once per sampler (none per token).

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

package struct Candidate: Sendable, Equatable {
    package var id: Int32
    package var logit: Float
}

package final class Sampler {
    package var params: SamplerParams
    /// Called on a private copy of the logits ([n_vocab]) before anything else; set disallowed tokens to
    /// -infinity (constrained decoding plugs in here). Masked tokens can never be drawn.
    package var logitMask: ((UnsafeMutableBufferPointer<Float>) -> Void)?

    private var rng: Xoshiro256StarStar
    private var history: [Int32] = []        // accepted tokens, the last `penaltyLastN` kept
    private var work: [Float] = []           // [n_vocab] masked + penalised logits
    private var cands: [Candidate] = []      // [n_vocab] survivors; `nCands` valid
    private var nCands = 0
    private var sortedPrefix = 0             // cands[0..<sortedPrefix] sorted descending, larger than the rest
    private var windowScratch: [Int32] = []

    package init(params: SamplerParams) {
        self.params = params
        self.rng = Xoshiro256StarStar(seed: params.seed)
    }

    /// Forget the token history and restart the RNG from the seed.
    package func reset() {
        history.removeAll(keepingCapacity: true)
        rng = Xoshiro256StarStar(seed: params.seed)
    }

    /// Record a token that became part of the sequence (prompt or generated) for the penalties.
    package func accept(_ token: Int32) {
        guard params.penaltyLastN != 0 else { return }
        history.append(token)
        // Trim in batches so that accepting stays O(1) amortised (-1 = keep everything).
        let cap = params.penaltyLastN
        if cap > 0 && history.count > cap + 1024 { history.removeFirst(history.count - cap) }
    }

    package func accept<S: Sequence>(contentsOf tokens: S) where S.Element == Int32 {
        for t in tokens { accept(t) }
    }

    /// Draw the next token from `logits` ([n_vocab]). Does not call `accept`.
    package func sample(logits: UnsafeBufferPointer<Float>) -> Int32 {
        prepareLogits(logits)
        if params.temperature <= 0 { return argmaxOfWork() }
        filter()
        return draw()
    }

    package func sample(logits: [Float]) -> Int32 {
        logits.withUnsafeBufferPointer { sample(logits: $0) }
    }

    /// The tokens that survive the chain for these logits, with their final (tempered) probabilities,
    /// most likely first. For tests and for callers that want to inspect the distribution.
    package func distribution(logits: [Float]) -> [(id: Int32, probability: Double)] {
        logits.withUnsafeBufferPointer { prepareLogits($0) }
        if params.temperature <= 0 { return [(argmaxOfWork(), 1.0)] }
        filter()
        let probs = temperedProbabilities()
        var out: [(id: Int32, probability: Double)] = []
        out.reserveCapacity(nCands)
        for i in 0..<nCands { out.append((cands[i].id, probs[i])) }
        out.sort { $0.probability > $1.probability || ($0.probability == $1.probability && $0.id < $1.id) }
        return out
    }

    // MARK: - Stages

    /// Copy, mask and penalise.
    private func prepareLogits(_ logits: UnsafeBufferPointer<Float>) {
        let n = logits.count
        if work.count != n {
            work = [Float](repeating: 0, count: n)
            cands = [Candidate](repeating: Candidate(id: 0, logit: 0), count: n)
        }
        work.withUnsafeMutableBufferPointer { w in
            if let src = logits.baseAddress, let dst = w.baseAddress { dst.update(from: src, count: n) }
            if let mask = logitMask { mask(w) }
        }
        applyPenalties()
    }

    /// llama.cpp penalties: for each distinct token in the window with count c,
    /// `logit = logit > 0 ? logit / repeat : logit * repeat`, then `logit -= c * freq + (c > 0) * presence`.
    private func applyPenalties() {
        let p = params
        guard p.penaltyLastN != 0, !history.isEmpty,
            p.repetitionPenalty != 1 || p.frequencyPenalty != 0 || p.presencePenalty != 0
        else { return }
        let windowCount = p.penaltyLastN < 0 ? history.count : min(p.penaltyLastN, history.count)
        windowScratch.removeAll(keepingCapacity: true)
        windowScratch.append(contentsOf: history[(history.count - windowCount)...])
        windowScratch.sort()
        var i = 0
        let n = work.count
        while i < windowScratch.count {
            let tok = windowScratch[i]
            var j = i
            while j < windowScratch.count && windowScratch[j] == tok { j += 1 }
            let c = Float(j - i)
            i = j
            guard tok >= 0, Int(tok) < n else { continue }
            var l = work[Int(tok)]
            l = l > 0 ? l / p.repetitionPenalty : l * p.repetitionPenalty
            l -= c * p.frequencyPenalty + p.presencePenalty
            work[Int(tok)] = l
        }
    }

    private func argmaxOfWork() -> Int32 {
        var best = 0
        var bestValue = -Float.infinity
        for i in 0..<work.count where work[i] > bestValue {  // strict: the first maximum wins (llama.cpp)
            bestValue = work[i]
            best = i
        }
        return Int32(best)
    }

    /// top-k → top-p → min-p on `work`, leaving the survivors in `cands[0..<nCands]`.
    private func filter() {
        let p = params
        let n = work.count
        let minKeep = max(1, p.minKeep)
        if p.topK > 0 && p.topK < n {
            selectTopK(max(p.topK, minKeep))
        } else {
            // All finite tokens are candidates (masked ones can never be drawn).
            var m = 0
            cands.withUnsafeMutableBufferPointer { c in
                for i in 0..<n where work[i] > -Float.infinity {
                    c[m] = Candidate(id: Int32(i), logit: work[i])
                    m += 1
                }
            }
            nCands = m
            sortedPrefix = 0
            if m == 0 {  // everything masked: fall back to the argmax so that we never return garbage
                cands[0] = Candidate(id: argmaxOfWork(), logit: 0)
                nCands = 1
                sortedPrefix = 1
            }
        }
        if p.topP < 1 { topP(p.topP, minKeep: minKeep) }
        if p.minP > 0 { minP(p.minP, minKeep: minKeep) }
    }

    /// Keep the k largest logits: one pass with a min-heap of size k, then sort those k descending.
    private func selectTopK(_ k: Int) {
        cands.withUnsafeMutableBufferPointer { c in
            work.withUnsafeBufferPointer { w in
                var size = 0
                for i in 0..<w.count {
                    let v = w[i]
                    if size < k {
                        guard v > -Float.infinity else { continue }
                        c[size] = Candidate(id: Int32(i), logit: v)
                        size += 1
                        Self.siftUp(c, size - 1)
                    } else if v > c[0].logit {
                        c[0] = Candidate(id: Int32(i), logit: v)
                        Self.siftDown(c, 0, size)
                    }
                }
                nCands = size
            }
            Self.sortDescending(c, count: nCands)
        }
        sortedPrefix = nCands
        if nCands == 0 {
            cands[0] = Candidate(id: argmaxOfWork(), logit: 0)
            nCands = 1
            sortedPrefix = 1
        }
    }

    /// Nucleus: softmax over the candidates, keep the shortest most-likely prefix with cumulative p >= `p`.
    private func topP(_ p: Float, minKeep: Int) {
        guard nCands > 1 else { return }
        let maxLogit = maxCandidateLogit()
        var sum = 0.0
        for i in 0..<nCands { sum += exp(Double(cands[i].logit - maxLogit)) }
        var need = min(nCands, 64)
        while true {
            ensureSortedPrefix(need)
            var cum = 0.0
            for i in 0..<need {
                cum += exp(Double(cands[i].logit - maxLogit)) / sum
                if cum >= Double(p) && i + 1 >= minKeep {
                    nCands = i + 1
                    sortedPrefix = min(sortedPrefix, nCands)
                    return
                }
            }
            if need == nCands { return }
            need = min(nCands, need * 4)
        }
    }

    /// Keep tokens whose logit is >= max + ln(minP) (probability >= minP * p_max); at least `minKeep`.
    private func minP(_ minP: Float, minKeep: Int) {
        guard nCands > 1 else { return }
        let threshold = maxCandidateLogit() + logf(minP)
        var kept = 0
        for i in 0..<nCands where cands[i].logit >= threshold { kept += 1 }
        if kept < minKeep {
            ensureSortedPrefix(min(minKeep, nCands))
            nCands = min(minKeep, nCands)
            return
        }
        if sortedPrefix >= nCands {
            nCands = kept  // sorted: the survivors are exactly the prefix
            sortedPrefix = kept
            return
        }
        var m = 0
        for i in 0..<nCands where cands[i].logit >= threshold {
            cands[m] = cands[i]
            m += 1
        }
        nCands = m
        sortedPrefix = 0
    }

    /// Final probabilities after temperature, in candidate order.
    private func temperedProbabilities() -> [Double] {
        let t = Double(params.temperature)
        let maxLogit = Double(maxCandidateLogit())
        var probs = [Double](repeating: 0, count: nCands)
        var sum = 0.0
        for i in 0..<nCands {
            let e = exp((Double(cands[i].logit) - maxLogit) / t)
            probs[i] = e
            sum += e
        }
        for i in 0..<nCands { probs[i] /= sum }
        return probs
    }

    /// Softmax of logit/T over the survivors and one uniform draw (no allocation).
    private func draw() -> Int32 {
        let t = Double(params.temperature)
        let maxLogit = Double(maxCandidateLogit())
        var sum = 0.0
        for i in 0..<nCands { sum += exp((Double(cands[i].logit) - maxLogit) / t) }
        guard sum.isFinite, sum > 0 else { return cands[0].id }
        let target = rng.nextUnitDouble() * sum
        var cum = 0.0
        for i in 0..<nCands {
            cum += exp((Double(cands[i].logit) - maxLogit) / t)
            if target < cum { return cands[i].id }
        }
        return cands[nCands - 1].id  // rounding at the very top of the range
    }

    // MARK: - Helpers

    private func maxCandidateLogit() -> Float {
        if sortedPrefix > 0 { return cands[0].logit }
        var m = -Float.infinity
        for i in 0..<nCands { m = max(m, cands[i].logit) }
        return m
    }

    /// Make cands[0..<k] the k largest, sorted descending (partial selection, then sort of the prefix).
    private func ensureSortedPrefix(_ k: Int) {
        guard k > sortedPrefix else { return }
        cands.withUnsafeMutableBufferPointer { c in
            Self.selectLargest(c, lo: sortedPrefix, hi: nCands, k: k)
            Self.sortDescending(UnsafeMutableBufferPointer(rebasing: c[sortedPrefix..<k]), count: k - sortedPrefix)
        }
        sortedPrefix = k
    }

    /// Quickselect: afterwards c[lo..<k] hold the largest (k - lo) elements of c[lo..<hi] (unordered).
    private static func selectLargest(_ c: UnsafeMutableBufferPointer<Candidate>, lo: Int, hi: Int, k: Int) {
        var lo = lo
        var hi = hi - 1
        while lo < hi {
            let mid = lo + (hi - lo) / 2
            // median of three as pivot
            let a = c[lo].logit, b = c[mid].logit, d = c[hi].logit
            let pivot = max(min(a, b), min(max(a, b), d))
            var i = lo
            var j = hi
            while i <= j {
                while c[i].logit > pivot { i += 1 }
                while c[j].logit < pivot { j -= 1 }
                if i <= j {
                    c.swapAt(i, j)
                    i += 1
                    j -= 1
                }
            }
            // [lo...j] >= pivot, [i...hi] <= pivot
            if k - 1 <= j { hi = j } else if k - 1 >= i { lo = i } else { return }
        }
    }

    private static func sortDescending(_ c: UnsafeMutableBufferPointer<Candidate>, count: Int) {
        var prefix = UnsafeMutableBufferPointer(rebasing: c[0..<count])
        prefix.sort { $0.logit > $1.logit }
    }

    private static func siftUp(_ c: UnsafeMutableBufferPointer<Candidate>, _ i: Int) {
        var i = i
        while i > 0 {
            let parent = (i - 1) / 2
            if c[i].logit < c[parent].logit {
                c.swapAt(i, parent)
                i = parent
            } else { return }
        }
    }

    private static func siftDown(_ c: UnsafeMutableBufferPointer<Candidate>, _ i: Int, _ size: Int) {
        var i = i
        while true {
            let l = 2 * i + 1
            let r = l + 1
            var smallest = i
            if l < size && c[l].logit < c[smallest].logit { smallest = l }
            if r < size && c[r].logit < c[smallest].logit { smallest = r }
            if smallest == i { return }
            c.swapAt(i, smallest)
            i = smallest
        }
    }
}
