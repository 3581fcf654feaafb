import Glibc
import LeapGrammar
import LeapJSON

/// Tests/Fixtures/<area>, found from this file's location.
func fixturesDir(_ area: String) -> String {
    var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast(2)  // LeapGrammarTests/Support.swift
    return parts.joined(separator: "/") + "/Fixtures/" + area
}

func readBytes(_ path: String) -> [UInt8]? {
    guard let f = fopen(path, "rb") else { return nil }
    defer { fclose(f) }
    var bytes: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = fread(&buf, 1, buf.count, f)
        if n <= 0 { break }
        bytes.append(contentsOf: buf[0..<n])
    }
    return bytes
}

/// splitmix64: seeded, reproducible.
struct TestRNG: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

struct GoldenCase {
    var name: String
    var schema: JSONValue
    var valid: [String]
    var invalid: [String]
    /// Valid per JSON Schema, rejected by the grammar's documented policy.
    var policy: [String]
}

/// Tests/Fixtures/grammar/goldens.json (scripts/fixtures/make_grammar_goldens.py).
let goldenCases: [GoldenCase] = {
    guard let bytes = readBytes(fixturesDir("grammar") + "/goldens.json"),
          let doc = try? JSONParser.parse(bytes: bytes), let cases = doc["cases"]?.arrayValue else { return [] }
    return cases.compactMap { c in
        guard let name = c["name"]?.stringValue, let schema = c["schema"] else { return nil }
        return GoldenCase(name: name, schema: schema,
                          valid: (c["valid"]?.arrayValue ?? []).compactMap { $0.stringValue },
                          invalid: (c["invalid"]?.arrayValue ?? []).compactMap { $0.stringValue },
                          policy: (c["policy"]?.arrayValue ?? []).compactMap { $0.stringValue })
    }
}()

func golden(_ name: String) -> GoldenCase? { goldenCases.first { $0.name == name } }

/// The SmolLM2 vocabulary fixture (scripts/fixtures/dump_vocab.py): token bytes and EOG ids.
let smolVocab: (tokens: [[UInt8]], eog: [Int])? = {
    guard let b = readBytes(fixturesDir("grammar") + "/smollm2_vocab.bin"), b.count >= 8,
          b[0..<4].elementsEqual(Array("LVOC".utf8)) else { return nil }
    func u32(_ i: Int) -> Int { Int(b[i]) | Int(b[i + 1]) << 8 | Int(b[i + 2]) << 16 | Int(b[i + 3]) << 24 }
    var pos = 4
    let n = u32(pos)
    pos += 4
    var tokens: [[UInt8]] = []
    for _ in 0..<n {
        guard pos + 2 <= b.count else { return nil }
        let len = Int(b[pos]) | Int(b[pos + 1]) << 8
        pos += 2
        guard pos + len <= b.count else { return nil }
        tokens.append(Array(b[pos..<pos + len]))
        pos += len
    }
    guard pos + 4 <= b.count else { return nil }
    let ne = u32(pos)
    pos += 4
    var eog: [Int] = []
    for _ in 0..<ne where pos + 4 <= b.count {
        eog.append(u32(pos))
        pos += 4
    }
    return (tokens, eog)
}()

/// A synthetic vocabulary: every single byte, multi-byte UTF-8 characters, JSON punctuation pieces,
/// whitespace runs, literals, digits, words with quotes; then special (empty) tokens; the last id is EOG.
func syntheticVocabulary(extraWords: Int = 300, seed: UInt64 = 7) -> (tokens: [[UInt8]], eog: [Int]) {
    var tokens: [[UInt8]] = (0..<256).map { [UInt8($0)] }
    var seen = Set(tokens)
    func add(_ s: String) {
        let b = Array(s.utf8)
        if !b.isEmpty && seen.insert(b).inserted { tokens.append(b) }
    }
    for s in ["é", "ü", "日", "本", "語", "😀", "𝄞", "—", "\u{2028}", "ß", "ñ", "€"] { add(s) }
    for s in ["{\"", "\":", "\": ", "\", \"", "\",\"", "\"}", "\"},", "}]", "}}", "]}", "[{", "[]", "{}", "\",", "\"]",
              ", ", ",\n", "\n  ", "\n    ", "\n", "  ", "    ", " \"", "\":\"", "\": \"", "\":[", "\": [", "\":{",
              "\\\"", "\\n", "\\u", "\\\\", "\\ud83d", "\\ude00", "\\u00e9", "00", "0.", ".5", "e+", "E-", "-1", "12",
              "123", "99", "1000", "true", "false", "null", "tru", "nul", " true", " null", "\"\"", "\"a", "a\"",
              "name", "\"name", "age", "value", "children", "red", "green", "blue", "\"red\"", "point", "version",
              "kind", "tags", "user", "profile", "bio", "id", "active", "color", "size", "mixed", "note", "next",
              "pair", "few", "short", "big", " ", "\t", "\r\n", "\u{7F}", "ab", "abc", "hello", " world", "x\"y"] {
        add(s)
    }
    var rng = TestRNG(seed: seed)
    let letters = Array("abcdefghijklmnopqrstuvwxyz _\"{}[],:0123456789".utf8)
    while tokens.count < 256 + 12 + 100 + extraWords {
        let n = 2 + Int(rng.next() % 6)
        add(String(decoding: (0..<n).map { _ in letters[Int(rng.next() % UInt64(letters.count))] }, as: UTF8.self))
    }
    tokens.append([])  // a special token: never allowed
    tokens.append([])  // EOG
    return (tokens, [tokens.count - 1])
}

/// Random walk: random allowed tokens for `freeSteps`, then the token that follows the shortest
/// completion. Returns the generated bytes, or nil if the walk got stuck (no allowed token).
func randomWalk(_ grammar: Grammar, _ index: TokenVocabularyIndex, rng: inout TestRNG, freeSteps: Int,
                maxSteps: Int = 3000) -> [UInt8]? {
    let m = grammar.makeMatcher()
    var out: [UInt8] = []
    var mask = TokenMask(vocabularySize: index.vocabularySize)
    for step in 0..<maxSteps {
        if m.isComplete { return out }
        index.fillMask(for: m, into: &mask)
        let allowed = mask.allowedIDs
        if allowed.isEmpty { return nil }
        var pick: Int
        if step < freeSteps {
            pick = allowed[Int(rng.next() % UInt64(allowed.count))]
        } else {
            let completion = m.shortestCompletion()
            if completion.isEmpty, let e = index.endOfGeneration.first, mask.contains(e) { return out }
            // The longest allowed token that is a prefix of the completion.
            pick = -1
            var best = 0
            for id in allowed {
                let t = index.tokenBytes[id]
                if t.count > best && t.count <= completion.count && completion.starts(with: t) {
                    best = t.count
                    pick = id
                }
            }
            if pick < 0 { return nil }
        }
        if index.endOfGeneration.contains(pick) {
            guard m.canEnd else { return nil }
            return out
        }
        guard index.acceptToken(pick, matcher: m) else { return nil }
        out += index.tokenBytes[pick]
    }
    return m.canEnd ? out : nil
}
