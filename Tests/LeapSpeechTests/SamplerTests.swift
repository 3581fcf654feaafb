import Glibc
import Testing
import LeapSpeech

private func draw(_ s: inout AudioCodeSampler, _ logits: [Float]) throws -> Int32 {
    try logits.withUnsafeBufferPointer { try s.sample($0) }
}

@Test func greedyWhenTemperatureIsNilZeroOrTopKIsOne() throws {
    let logits: [Float] = [0.1, 2.5, -1, 2.5, 0.3]  // a tie: the first index wins (torch.argmax)
    for p in [AudioSamplingParams(temperature: nil, topK: 8), AudioSamplingParams(temperature: 0, topK: nil),
              AudioSamplingParams(temperature: -1, topK: 4), AudioSamplingParams(temperature: 1.5, topK: 1)] {
        var s = AudioCodeSampler(p)
        #expect(p.isGreedy)
        for _ in 0..<20 { #expect(try draw(&s, logits) == 1) }
    }
}

// Top-k keeps every logit equal to the k-th largest: with k = 2 and three tied maxima all three are drawn,
// the others never. Their frequencies follow softmax(logits / T) renormalised over the survivors (here
// uniform): 3000 draws give each about 1000 (binomial sd ≈ 26; 150 is ~6 sd).
@Test func topKKeepsTiesAndDrawsTheirDistribution() throws {
    let logits: [Float] = [1, 3, 0.5, 3, 2.9, 3, -2]
    var s = AudioCodeSampler(AudioSamplingParams(temperature: 0.8, topK: 2, seed: 42))
    var counts = [Int](repeating: 0, count: logits.count)
    for _ in 0..<3000 { counts[Int(try draw(&s, logits))] += 1 }
    #expect(counts[0] == 0 && counts[2] == 0 && counts[4] == 0 && counts[6] == 0)
    for i in [1, 3, 5] { #expect(abs(counts[i] - 1000) < 150, "\(counts)") }
}

// Temperature shapes the distribution: p(0)/p(1) = exp((l0 - l1) / T). With l0 - l1 = ln 3 and T = 0.5 the
// ratio is 9, p(0) = 0.9; 4000 draws: sd ≈ 19, bound 100.
@Test func temperatureScalesLogits() throws {
    let logits: [Float] = [Float(log(3.0)), 0]
    var s = AudioCodeSampler(AudioSamplingParams(temperature: 0.5, topK: nil, seed: 7))
    var zeros = 0
    for _ in 0..<4000 where try draw(&s, logits) == 0 { zeros += 1 }
    #expect(abs(zeros - 3600) < 100, "\(zeros)")
}

@Test func seededSamplersReproduce() throws {
    var gen = TestNumbers(state: 5)
    let rows: [[Float]] = (0..<50).map { _ in (0..<2049).map { _ in 3 * gen.next() } }
    func run(_ seed: UInt64) throws -> [Int32] {
        var s = AudioCodeSampler(AudioSamplingParams(temperature: 0.8, topK: 64, seed: seed))
        return try rows.map { try draw(&s, $0) }
    }
    let a = try run(1), b = try run(1), c = try run(2)
    #expect(a == b)
    #expect(a != c)
    // every draw is among the row's 64 largest
    for (row, code) in zip(rows, a) {
        let kth = row.sorted(by: >)[63]
        #expect(row[Int(code)] >= kth)
    }
    var s = AudioCodeSampler(AudioSamplingParams(temperature: 0.8, topK: 64, seed: 1))
    _ = try draw(&s, rows[0])
    s.reset()
    #expect(try rows.map { try draw(&s, $0) } == a)
}

@Test func samplerRejectsLogitsWithoutAFiniteValue() {
    var s = AudioCodeSampler(AudioSamplingParams(temperature: 1, topK: nil))
    #expect(leapError { _ = try draw(&s, [.nan, .nan]) }?.kind == .invalidArgument)
    #expect(leapError { _ = try draw(&s, []) }?.kind == .invalidArgument)
    var g = AudioCodeSampler(.greedy)
    #expect(leapError { _ = try draw(&g, [.nan]) }?.kind == .invalidArgument)
}
