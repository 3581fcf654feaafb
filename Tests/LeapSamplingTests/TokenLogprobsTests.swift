import Testing
import LeapSampling
#if canImport(Glibc)
import Glibc
#endif

/// log_softmax in Double, the plain way, and the ids ordered by it (ties: the lower id first).
private func reference(_ logits: [Float]) -> (logprobs: [Double], order: [Int32]) {
    let m = logits.map(Double.init).max()!
    let z = m + log(logits.reduce(0.0) { $0 + exp(Double($1) - m) })
    let lp = logits.map { Double($0) - z }
    func before(_ a: Int32, _ b: Int32) -> Bool {
        let la: Double = lp[Int(a)], lb: Double = lp[Int(b)]
        return la > lb || (la == lb && a < b)
    }
    let order = (0..<Int32(logits.count)).sorted(by: before)
    return (lp, order)
}

@Test func logprobsAreLogSoftmaxOfTheLogits() {
    var rng = Xoshiro256StarStar(seed: 7)
    for trial in 0..<20 {
        let n = 1 + trial * 37
        var logits = (0..<n).map { _ in Float(Double(rng.next() % 20_000) / 1000 - 10) }
        if n > 4 { logits[1] = -.infinity; logits[3] = logits[2] }   // masked tokens and a tie
        let (lp, order) = reference(logits)
        for k in [0, 1, 5, 20, n] {
            let d = logits.withUnsafeBufferPointer { LogitDistribution(logits: $0, top: k) }
            #expect(d.top.map(\.token) == Array(order.prefix(min(k, n))))
            for t in d.top {
                #expect(t.logprob == -.infinity ? lp[Int(t.token)] == -.infinity : abs(Double(t.logprob) - lp[Int(t.token)]) < 1e-4)
            }
            for id in [0, n - 1] {
                let got = logits.withUnsafeBufferPointer { d.logprob(of: Int32(id), in: $0) }
                #expect(got == -.infinity ? lp[id] == -.infinity : abs(Double(got) - lp[id]) < 1e-4)
            }
        }
        // The whole vocabulary's probabilities sum to 1.
        let all = logits.withUnsafeBufferPointer { LogitDistribution(logits: $0, top: n) }
        #expect(abs(all.top.reduce(0.0) { $0 + exp(Double($1.logprob)) } - 1) < 1e-4)
    }
}

@Test func logprobsOfLargeLogitsDoNotOverflow() {
    let logits: [Float] = [1000, 999, -1000]
    let d = logits.withUnsafeBufferPointer { LogitDistribution(logits: $0, top: 2) }
    #expect(d.top.map(\.token) == [0, 1])
    #expect(abs(Double(d.top[0].logprob) - -log(1 + exp(-1.0))) < 1e-6)
    #expect(abs(Double(d.top[1].logprob) - (-1 - log(1 + exp(-1.0)))) < 1e-6)
    #expect(d.logSum.isFinite)
}

@Test func everyTokenMaskedGivesNoAlternatives() {
    let logits: [Float] = [-.infinity, -.infinity]
    let d = logits.withUnsafeBufferPointer { LogitDistribution(logits: $0, top: 2) }
    #expect(d.top.isEmpty)
    #expect(d.maxLogit == -.infinity)
}
