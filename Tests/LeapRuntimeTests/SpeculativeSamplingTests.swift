// Sampled speculative decoding draws from the model's own distribution: a chi-square test of the tokens at
// verified positions, over many seeded generations of a tiny model whose drafter guesses the most likely
// continuation in half of its passes and tokens the model almost never picks in the other half.
import Glibc
import LeapCore
import LeapMessages
import LeapModels
import LeapRuntime
import LeapTestFiles
import Testing

final class PassCounter: @unchecked Sendable {
    var passes = 0
}

/// Guesses `likely` (the most likely tokens after the first one) in even passes, `unlikely` in odd ones.
final class HalfWrongDrafter: TokenDrafter {
    let likely: [Int32], unlikely: [Int32]
    let counter: PassCounter
    init(likely: [Int32], unlikely: [Int32], counter: PassCounter) {
        (self.likely, self.unlikely, self.counter) = (likely, unlikely, counter)
    }

    func draft(after history: [Int32], generated: Int, count: Int) -> [Int32] {
        counter.passes += 1
        return Array((counter.passes % 2 == 0 ? likely : unlikely).prefix(count))
    }
}

/// Softmax of logits / temperature (the sampler's distribution with every filter off), in Double.
private func tempered(_ logits: UnsafeBufferPointer<Float>, _ t: Double) -> [Double] {
    let m = Double(logits.max() ?? 0)
    var p = logits.map { exp((Double($0) - m) / t) }
    let s = p.reduce(0, +)
    for i in p.indices { p[i] /= s }
    return p
}

/// The upper 0.1% point of chi-square with `df` degrees of freedom (Wilson-Hilferty).
private func chiSquareCritical(df: Int) -> Double {
    let d = Double(df), z = 3.0902
    let a = 2 / (9 * d)
    return d * pow(1 - a + z * a.squareRoot(), 3)
}

/// Chi-square statistic of `observed` tokens against `p`: tokens expected at least 5 times each get a bin
/// (end-of-generation tokens excepted: a generation that ends has no token there), everything else one bin.
private func chiSquare(_ observed: [Int32?], _ p: [Double], isEnd: (Int32) -> Bool) -> (stat: Double, df: Int) {
    let n = Double(observed.count)
    let bins = p.indices.filter { p[$0] * n >= 5 && !isEnd(Int32($0)) }
    var counts = [Int: Int]()
    var other = 0
    for t in observed {
        if let t, bins.contains(Int(t)) { counts[Int(t), default: 0] += 1 } else { other += 1 }
    }
    var stat = 0.0
    var rest = 1.0
    for b in bins {
        let e = p[b] * n
        rest -= p[b]
        stat += pow(Double(counts[b] ?? 0) - e, 2) / e
    }
    let eo = max(rest, 0) * n
    if eo > 0 { stat += pow(Double(other) - eo, 2) / eo }
    return (stat, bins.count)
}

@Test func sampledTokensAtVerifiedPositionsFollowTheModelsDistribution() throws {
    let runner = try ModelRunner.load(path: fixturesDir("models") + "/lfm2-tiny-q8_0.gguf")
    let model = try #require(runner.languageModel)
    let temperature: Float = 1.0
    var o = GenerationOptions()
    o.temperature = temperature
    o.topK = 0
    o.topP = 1
    o.minP = 0
    o.repetitionPenalty = 1
    o.maxTokens = 3
    let message = ChatMessage(role: .user, text: "Hello")
    // The model's distributions: after the prompt, after its likeliest first token, after the two likeliest.
    let prompt = try PromptBuilder(runner: runner).tokens(for: [message], tools: [], options: o)
    let ctx = try model.makeContext(contextSize: 128)
    try ctx.eval(tokens: prompt)
    var dists: [[Double]] = []
    var path: [Int32] = []
    for _ in 0..<3 {
        let p = tempered(try ctx.logits(), Double(temperature))
        dists.append(p)
        let best = Int32(p.indices.max { p[$0] < p[$1] } ?? 0)
        path.append(best)
        try ctx.eval(tokens: [best])
    }
    let unlikely = dists[1...].map { p in Int32(p.indices.min { p[$0] < p[$1] } ?? 0) }
    let counter = PassCounter()
    let likely = Array(path[1...])
    o.drafter = .custom { HalfWrongDrafter(likely: likely, unlikely: unlikely, counter: counter) }
    o.maxDraftTokens = 2

    var runs: [[Int32]] = []
    var drafted = 0, accepted = 0
    for seed in 0..<2000 {
        o.rngSeed = UInt64(seed)
        // Each generation from the prior rate, not the one the last generations learned: every one of
        // them then drafts at its first step, right or wrong by turns.
        runner.rememberDrafting(DraftController.Memory(), for: HalfWrongDrafter(likely: [], unlikely: [], counter: counter))
        let r = try runTurn(runner, message, o)
        runs.append(r.tokens)
        drafted += r.drafted
        accepted += r.accepted
    }
    #expect(accepted > 0 && accepted < drafted)
    let isEnd = { (t: Int32) in runner.tokenizer.isEndOfGeneration(t) }
    // Position 1 among the runs that began with the likeliest token, position 2 among those that began with
    // the two likeliest (positions 1 and 2 are the verified ones: the drafts follow the first token).
    for pos in 1...2 {
        let given = runs.filter { $0.count >= pos && Array($0[0..<pos]) == Array(path[0..<pos]) }
        let observed = given.map { $0.count > pos ? $0[pos] : nil }
        let (stat, df) = chiSquare(observed, dists[pos], isEnd: isEnd)
        let critical = chiSquareCritical(df: df)
        print("speculative sampling, position \(pos): \(observed.count) draws, chi-square \(stat) on \(df) degrees of freedom (0.1% point \(critical))")
        // At least the guessed token against the rest: an acceptance that favoured guesses would show there.
        #expect(observed.count >= 100 && df >= 1, "position \(pos): too few draws (\(observed.count)) or bins (\(df + 1)) to test")
        #expect(stat < critical, "position \(pos): chi-square \(stat) >= \(critical)")
    }
}
