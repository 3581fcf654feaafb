import Testing
import LeapSampling
#if canImport(Glibc)
import Glibc
#endif

/// Plain reference: natural-log probabilities → logits.
private func logits(_ probs: [Double]) -> [Float] { probs.map { Float(log($0)) } }

private func params(temp: Float = 1, topK: Int = 0, topP: Float = 1, minP: Float = 0, seed: UInt64 = 1) -> SamplerParams {
    var p = SamplerParams()
    p.temperature = temp
    p.topK = topK
    p.topP = topP
    p.minP = minP
    p.seed = seed
    return p
}

private func survivorIDs(_ s: Sampler, _ l: [Float]) -> Set<Int32> { Set(s.distribution(logits: l).map { $0.id }) }

@Test func rngIsReproducibleAndUniform() {
    var a = Xoshiro256StarStar(seed: 42)
    var b = Xoshiro256StarStar(seed: 42)
    var c = Xoshiro256StarStar(seed: 43)
    var same = true, differs = false
    for _ in 0..<100 {
        let x = a.next()
        if x != b.next() { same = false }
        if x != c.next() { differs = true }
    }
    #expect(same)
    #expect(differs)
    // Chi-square over 16 buckets, 160k draws; df = 15, critical value at p = 0.001 is 37.7.
    var buckets = [Int](repeating: 0, count: 16)
    let n = 160_000
    for _ in 0..<n {
        let u = a.nextUnitDouble()
        #expect(u >= 0 && u < 1)
        buckets[Int(u * 16)] += 1
    }
    let expected = Double(n) / 16
    let chi2 = buckets.reduce(0.0) { $0 + pow(Double($1) - expected, 2) / expected }
    #expect(chi2 < 37.7)
}

@Test func greedyPicksFirstMaximum() {
    let s = Sampler(params: .greedy)
    #expect(s.sample(logits: [1, 3, 2, 3]) == 1)
    #expect(s.sample(logits: [-5, -1, -2]) == 1)
}

@Test func topKKeepsTheKLargest() {
    let s = Sampler(params: params(topK: 3))
    #expect(survivorIDs(s, [0.1, 5, -2, 3, 4, 0]) == [1, 3, 4])
}

@Test func topPKeepsShortestPrefixReachingP() {
    let l = logits([0.5, 0.2, 0.15, 0.1, 0.05])
    #expect(survivorIDs(Sampler(params: params(topP: 0.68)), l) == [0, 1])
    #expect(survivorIDs(Sampler(params: params(topP: 0.9)), l) == [0, 1, 2, 3])
    #expect(survivorIDs(Sampler(params: params(topP: 0.3)), l) == [0])
    // min_keep forces more survivors
    var p = params(topP: 0.3)
    p.minKeep = 3
    #expect(survivorIDs(Sampler(params: p), l) == [0, 1, 2])
}

@Test func minPKeepsTokensAboveFractionOfMax() {
    let l = logits([0.5, 0.2, 0.15, 0.1, 0.05])
    // threshold 0.25 * 0.5 = 0.125 → 0.5, 0.2, 0.15
    #expect(survivorIDs(Sampler(params: params(minP: 0.25)), l) == [0, 1, 2])
    #expect(survivorIDs(Sampler(params: params(minP: 0.9)), l) == [0])
}

@Test func chainOrderFiltersBeforeTemperature() {
    // top-k then top-p on the un-tempered distribution, then temperature reshapes the survivors only.
    let probs = [0.4, 0.3, 0.2, 0.06, 0.04]
    let l = logits(probs)
    let t: Float = 2
    let d = Sampler(params: params(temp: t, topK: 4, topP: 0.85)).distribution(logits: l)
    // top-k 4 → renormalised [0.4,0.3,0.2,0.06]/0.96; cumulative .4167,.729,.9375 → 3 survive.
    #expect(Set(d.map { $0.id }) == [0, 1, 2])
    let tempered = probs[0..<3].map { pow($0, 1 / Double(t)) }
    let z = tempered.reduce(0, +)
    for (i, e) in d.enumerated() {
        #expect(e.id == Int32(i))
        #expect(abs(e.probability - tempered[i] / z) < 1e-6)
    }
}

@Test func penaltiesFollowLlamaCppFormula() {
    var p = params(temp: 1)
    p.repetitionPenalty = 2
    p.frequencyPenalty = 0.5
    p.presencePenalty = 0.25
    p.penaltyLastN = 3
    let s = Sampler(params: p)
    s.accept(contentsOf: [0, 1, 1, 2, 2])  // window (last 3) = [1, 2, 2]; token 0 fell out
    let l: [Float] = [1.0, 2.0, -1.0, 0.5]
    var expected = l.map(Double.init)
    expected[1] = 2.0 / 2 - 1 * 0.5 - 0.25
    expected[2] = -1.0 * 2 - 2 * 0.5 - 0.25
    let m = expected.max()!
    let z = expected.reduce(0) { $0 + exp($1 - m) }
    let d = s.distribution(logits: l)
    for e in d { #expect(abs(e.probability - exp(expected[Int(e.id)] - m) / z) < 1e-6) }
    #expect(d.count == 4)
}

@Test func maskedTokensAreNeverDrawn() {
    let s = Sampler(params: params(temp: 1.5, seed: 7))
    s.logitMask = { l in
        l[0] = -.infinity
        l[2] = -.infinity
    }
    let l: [Float] = [10, 0, 9, 0.5]
    for _ in 0..<500 {
        let t = s.sample(logits: l)
        #expect(t == 1 || t == 3)
    }
    let g = Sampler(params: .greedy)
    g.logitMask = { $0[0] = -.infinity }
    #expect(g.sample(logits: l) == 2)
}

@Test func drawsFollowTheDistribution() {
    // Seeded chi-square: 20k draws, df = 4, critical value at p = 0.001 is 18.47.
    let probs = [0.4, 0.25, 0.2, 0.1, 0.05]
    let s = Sampler(params: params(temp: 1, seed: 12345))
    var counts = [Int](repeating: 0, count: probs.count)
    let n = 20_000
    let l = logits(probs)
    for _ in 0..<n { counts[Int(s.sample(logits: l))] += 1 }
    var chi2 = 0.0
    for i in 0..<probs.count {
        let e = probs[i] * Double(n)
        chi2 += pow(Double(counts[i]) - e, 2) / e
    }
    #expect(chi2 < 18.47)
}

@Test func sameSeedSameTokens() {
    var values = [Float]()
    var g = Xoshiro256StarStar(seed: 99)
    for _ in 0..<1000 { values.append(Float(g.nextUnitDouble() * 4)) }
    func run(_ seed: UInt64) -> [Int32] {
        let s = Sampler(params: params(temp: 1, topK: 50, topP: 0.95, minP: 0.01, seed: seed))
        return (0..<64).map { _ in s.sample(logits: values) }
    }
    #expect(run(5) == run(5))
    #expect(run(5) != run(6))
    // reset restarts the RNG
    let s = Sampler(params: params(temp: 1, seed: 5))
    let a = (0..<20).map { _ in s.sample(logits: values) }
    s.reset()
    let b = (0..<20).map { _ in s.sample(logits: values) }
    #expect(a == b)
}

@Test func largeVocabularyMatchesFullSortReference() {
    let n = 262_144
    var g = Xoshiro256StarStar(seed: 3)
    var l = [Float](repeating: 0, count: n)
    for i in 0..<n { l[i] = Float(g.nextUnitDouble() * 12 - 6) }
    let order = (0..<n).sorted { l[$0] > l[$1] }
    // top-k 40
    #expect(survivorIDs(Sampler(params: params(topK: 40)), l) == Set(order[0..<40].map { Int32($0) }))
    // top-p 0.5 without top-k: reference from a full sort in Double
    let m = Double(l[order[0]])
    let z = l.reduce(0.0) { $0 + exp(Double($1) - m) }
    var cum = 0.0
    var keep = 0
    while cum < 0.5 {
        cum += exp(Double(l[order[keep]]) - m) / z
        keep += 1
    }
    #expect(survivorIDs(Sampler(params: params(topP: 0.5)), l) == Set(order[0..<keep].map { Int32($0) }))
    // min-p 0.5: exactly the tokens within ln 2 of the max
    let minPSet = Set((0..<n).filter { Double(l[$0]) >= m + log(0.5) - 1e-6 }.map { Int32($0) })
    #expect(survivorIDs(Sampler(params: params(minP: 0.5)), l) == minPSet)
}
