import Glibc
import LeapCore
import LeapGrammar
import LeapJSON

// Grammar-constrained decoding cost: milliseconds per token mask for several schemas on the SmolLM2
// vocabulary (49152 tokens, from Tests/Fixtures/grammar/smollm2_vocab.bin) and a synthetic 262144-token
// vocabulary (SmolLM2's tokens plus generated pieces), along a seeded random walk that picks an allowed
// token at each step (then closes the document along the shortest completion). Uncached figures are
// the best of 3 computations of each mask (the build machine is shared; preemption is not our cost).
//
//   leap-bench grammar [--vocab PATH] [--steps N]

private struct BenchRNG {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

private func loadVocab(_ path: String) -> (tokens: [[UInt8]], eog: [Int])? {
    guard let b = readFile(path), b.count >= 8, b[0..<4].elementsEqual(Array("LVOC".utf8)) else { return nil }
    func u32(_ i: Int) -> Int { Int(b[i]) | Int(b[i + 1]) << 8 | Int(b[i + 2]) << 16 | Int(b[i + 3]) << 24 }
    var pos = 8
    var tokens: [[UInt8]] = []
    for _ in 0..<u32(4) {
        guard pos + 2 <= b.count else { return nil }
        let len = Int(b[pos]) | Int(b[pos + 1]) << 8
        guard pos + 2 + len <= b.count else { return nil }
        tokens.append(Array(b[pos + 2..<pos + 2 + len]))
        pos += 2 + len
    }
    guard pos + 4 <= b.count else { return nil }
    var eog: [Int] = []
    for i in 0..<u32(pos) where pos + 8 + 4 * i <= b.count { eog.append(u32(pos + 4 + 4 * i)) }
    return (tokens, eog)
}

/// Pads a vocabulary to `size` with generated pieces: words with a leading space or capital, digit
/// runs, punctuation clusters, CJK and accented runs.
private func syntheticVocab(base: [[UInt8]], size: Int) -> [[UInt8]] {
    var tokens = base
    var seen = Set(base)
    var rng = BenchRNG(state: 42)
    let letters = Array("abcdefghijklmnopqrstuvwxyz".utf8)
    let punct = Array("{}[]\",:.;!?()-_'/\\ \n".utf8)
    let uni = ["é", "ü", "ñ", "日", "本", "語", "中", "文", "한", "국", "😀", "→", "—", "ß", "ç", "α", "β", "д", "ж"]
    while tokens.count < size {
        var t: [UInt8] = []
        switch rng.next() % 10 {
        case 0, 1, 2, 3:
            if rng.next() % 2 == 0 { t.append(0x20) }
            for i in 0..<(2 + Int(rng.next() % 9)) {
                var c = letters[Int(rng.next() % 26)]
                if i == 0 && rng.next() % 4 == 0 { c -= 32 }
                t.append(c)
            }
        case 4: for _ in 0..<(1 + Int(rng.next() % 5)) { t.append(UInt8(ascii: "0") + UInt8(rng.next() % 10)) }
        case 5, 6: for _ in 0..<(1 + Int(rng.next() % 4)) { t.append(punct[Int(rng.next() % UInt64(punct.count))]) }
        case 7: for _ in 0..<(1 + Int(rng.next() % 3)) { t += Array(uni[Int(rng.next() % UInt64(uni.count))].utf8) }
        default:
            t.append(punct[Int(rng.next() % UInt64(punct.count))])
            for _ in 0..<(1 + Int(rng.next() % 6)) { t.append(letters[Int(rng.next() % 26)]) }
        }
        if seen.insert(t).inserted { tokens.append(t) }
    }
    return tokens
}

private let benchSchemas: [(String, String)] = [
    ("person", ##"{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0,"maximum":150},"email":{"type":"string"},"tags":{"type":"array","items":{"type":"string"},"maxItems":5}},"required":["name","age"]}"##),
    ("tree", ##"{"$defs":{"node":{"type":"object","properties":{"value":{"type":"integer"},"label":{"type":"string","maxLength":20},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["value"]}},"$ref":"#/$defs/node"}"##),
    ("anyOf+enum", ##"{"type":"array","items":{"anyOf":[{"type":"object","properties":{"kind":{"const":"point"},"x":{"type":"number"},"y":{"type":"number"}},"required":["kind","x","y"]},{"type":"object","properties":{"kind":{"const":"label"},"text":{"type":"string"},"color":{"enum":["red","green","blue"]}},"required":["kind","text"]}]}}"##),
    ("any JSON", "{}"),
]

/// One constrained random walk; returns per-mask seconds.
private func walk(_ g: Grammar, _ index: TokenVocabularyIndex, seed: UInt64, steps: Int, cache: Bool)
    -> (masks: [Double], accepts: Double, bytes: Int, slowest: String) {
    var rng = BenchRNG(state: seed)
    let m = g.makeMatcher()
    m.cachesMasks = cache
    var mask = TokenMask(vocabularySize: index.vocabularySize)
    var times: [Double] = []
    var acceptTime = 0.0
    var bytes = 0
    var text: [UInt8] = []
    var slowest = ""
    for step in 0..<(steps * 4) {
        if m.isComplete { break }
        // The best of 3 (uncached) computations: the machine is shared, preemption is not our cost.
        var best = Double.infinity
        for _ in 0..<(cache ? 1 : 3) {
            let t0 = clockSeconds()
            index.fillMask(for: m, into: &mask)
            best = min(best, clockSeconds() - t0)
        }
        times.append(best)
        if times.last == times.max() { slowest = String(decoding: text.suffix(40), as: UTF8.self) }
        let allowed = mask.allowedIDs
        if allowed.isEmpty { break }
        var pick = allowed[Int(rng.next() % UInt64(allowed.count))]
        if step >= steps {
            let c = m.shortestCompletion()
            if c.isEmpty { break }
            var best = 0
            for id in allowed where index.tokenBytes[id].count > best && c.starts(with: index.tokenBytes[id]) {
                best = index.tokenBytes[id].count
                pick = id
            }
        }
        if index.endOfGeneration.contains(pick) { break }
        let t1 = clockSeconds()
        _ = index.acceptToken(pick, matcher: m)
        acceptTime += clockSeconds() - t1
        bytes += index.tokenBytes[pick].count
        text += index.tokenBytes[pick]
    }
    return (times, acceptTime, bytes, slowest)
}

func benchGrammar(_ args: [String]) {
    var vocabPath = "Tests/Fixtures/grammar/smollm2_vocab.bin"
    var steps = 200
    var i = 0
    while i < args.count {
        if args[i] == "--vocab", i + 1 < args.count { vocabPath = args[i + 1]; i += 1 }
        if args[i] == "--steps", i + 1 < args.count { steps = Int(args[i + 1]) ?? steps; i += 1 }
        i += 1
    }
    guard let smol = loadVocab(vocabPath) else {
        print("grammar: vocabulary fixture \(vocabPath) not found (run from the repository root or pass --vocab)")
        return
    }
    // Schema compile time.
    var wide = #"{"type":"object","properties":{"#
    for i in 0..<200 {
        wide += (i > 0 ? "," : "") + #""field\#(i)":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer","minimum":0,"maximum":1000},"c":{"enum":["x","y","z"]}},"required":["a"]}"#
    }
    wide += "}}"
    let compileCases = benchSchemas + [("200 nested properties", wide),
                                       ("maxItems 10000", #"{"type":"array","items":{"type":"integer"},"maxItems":10000}"#)]
    for (name, text) in compileCases {
        var best = Double.infinity
        var rules = 0
        for _ in 0..<5 {
            let t0 = clockSeconds()
            rules = (try? JSONSchemaGrammar(schemaText: text).grammar.ruleCount) ?? -1
            best = min(best, clockSeconds() - t0)
        }
        print("grammar compile \(name): \(fmt(best * 1e3)) ms (\(rules) rules)")
    }
    let vocabs: [(String, [[UInt8]], [Int])] = [
        ("SmolLM2 49152", smol.tokens, smol.eog),
        ("synthetic 262144", syntheticVocab(base: smol.tokens, size: 262_144), smol.eog),
    ]
    for (vname, tokens, eog) in vocabs {
        let t0 = clockSeconds()
        let index = TokenVocabularyIndex(tokens: tokens, endOfGeneration: eog)
        print("grammar index \(vname): built in \(fmt((clockSeconds() - t0) * 1e3)) ms, \(index.nodeCount) trie nodes")
        // Fixed states of the person schema: the cost of one uncached mask there.
        if let g = try? JSONSchemaGrammar(schemaText: benchSchemas[0].1).grammar {
            for prefix in [#"{"#, #"{"name":"#, #"{"name":"Ann"#, #"{"name":"Ann","age":1"#, #"{"name":"Ann","age":31,"tags":["#] {
                let m = g.makeMatcher()
                m.cachesMasks = false
                _ = m.accept(Array(prefix.utf8))
                var mask = TokenMask(vocabularySize: index.vocabularySize)
                var ms = Double.infinity
                for _ in 0..<20 {
                    let t1 = clockSeconds()
                    index.fillMask(for: m, into: &mask)
                    ms = min(ms, (clockSeconds() - t1) * 1e3)
                }
                print("grammar mask \(vname) person after '\(prefix)': \(fmt(ms)) ms (\(mask.allowedCount) allowed)")
            }
        }
        if args.contains("--states") { continue }
        for (sname, text) in benchSchemas {
            guard let g = try? JSONSchemaGrammar(schemaText: text).grammar else { continue }
            for cache in [false, true] {
                var all: [Double] = []
                var accepts = 0.0, bytes = 0
                var slow = (0.0, "")
                for seed in 1...3 {
                    let r = walk(g, index, seed: UInt64(seed), steps: steps, cache: cache)
                    if let mx = r.masks.max(), mx > slow.0 { slow = (mx, r.slowest) }
                    all += r.masks
                    accepts += r.accepts
                    bytes += r.bytes
                }
                all.sort()
                let mean = all.reduce(0, +) / Double(max(1, all.count))
                let p50 = all.isEmpty ? 0 : all[all.count / 2]
                let p99 = all.isEmpty ? 0 : all[min(all.count - 1, all.count * 99 / 100)]
                let mx = all.last ?? 0
                print("grammar mask \(vname) \(sname)\(cache ? " (cached)" : ""): \(fmt(mean * 1e3)) ms/mask mean "
                      + "(p50 \(fmt(p50 * 1e3)), p99 \(fmt(p99 * 1e3)), max \(fmt(mx * 1e3)); \(all.count) masks, "
                      + "\(bytes) bytes; accept \(fmt(accepts / Double(max(1, all.count)) * 1e6)) us/token)")
                if args.contains("--verbose") { print("  slowest mask after: \(slow.1.debugDescription)") }
            }
        }
    }
}

private func fmt(_ x: Double) -> String {
    let v = Int((x * 100).rounded())
    let frac = v % 100
    return "\(v / 100).\(frac < 10 ? "0" : "")\(frac)"
}
