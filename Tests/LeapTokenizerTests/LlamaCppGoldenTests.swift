import Foundation
import LeapTokenizer
import Testing

// Goldens produced by llama.cpp (scripts/fixtures/make_tokenizer_goldens.py) over a multilingual corpus:
// token ids for three (add_special, parse_special) modes, whole-sequence detokenization, single-token
// pieces, special ids and the end-of-generation set.

let modelGoldenNames = ["smollm2", "gemma3"]
let llamaCppVocabGoldenNames = [
    "llama-bpe", "qwen2", "qwen35", "gpt-2", "starcoder", "refact", "command-r", "deepseek-llm", "deepseek-coder",
    "falcon", "mpt", "gpt-neox", "aquila", "llama-spm", "phi-3", "baichuan",
]
let goldenNames = ["lfm2-tiny"] + modelGoldenNames + llamaCppVocabGoldenNames

/// The GGUF a golden file was made from, when available here.
func goldenVocabPath(_ golden: [String: Any]) -> String? {
    guard let file = golden["file"] as? String else { return nil }
    let candidates = [fixturesDir.appendingPathComponent(file)] + [vocabsDir, modelsDir].compactMap { $0?.appendingPathComponent(file) }
    return candidates.map(\.path).first { FileManager.default.fileExists(atPath: $0) }
}

func goldenBytes(_ v: Any?) -> [UInt8] {
    guard let d = v as? [String: Any] else { return [] }
    if let t = d["text"] as? String { return Array(t.utf8) }
    if let h = d["hex"] as? String {
        let c = Array(h.utf8)
        return stride(from: 0, to: c.count, by: 2).compactMap { UInt8(String(decoding: c[$0..<($0 + 2)], as: UTF8.self), radix: 16) }
    }
    return []
}

func show(_ b: [UInt8]) -> String { String(decoding: b, as: UTF8.self).debugDescription }

@Test func llamaCppGoldensTinyLFM2() throws {
    try checkGolden("lfm2-tiny")
}

@Test(.enabled(if: modelsDir != nil, "real models absent: run scripts/fetch-models.sh"), arguments: modelGoldenNames)
func llamaCppGoldensRealModels(name: String) throws {
    try checkGolden(name)
}

@Test(.enabled(if: vocabsDir != nil, "llama.cpp vocabularies absent: run scripts/fetch-vocabs.sh"),
      arguments: llamaCppVocabGoldenNames)
func llamaCppGoldensVocabFiles(name: String) throws {
    try checkGolden(name)
}

func checkGolden(_ name: String) throws {
    let url = fixturesDir.appendingPathComponent("goldens/\(name).json")
    let golden = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
    let path = try #require(goldenVocabPath(golden), "\(golden["file"] ?? "?") not found")
    let tok = try Tokenizer(path: path)
    #expect(tok.vocabularySize == golden["n_tokens"] as? Int)
    #expect(tok.bosID.map(Int.init) == golden["bos"] as? Int)
    #expect(tok.eosID.map(Int.init) == golden["eos"] as? Int)
    // With several end-of-turn texts present llama.cpp's pick depends on its hash-map order; any of them is
    // fine as long as both are end-of-generation tokens.
    let eog = golden["eog"] as? [Int] ?? []
    if let mine = tok.eotID.map(Int.init), let theirs = golden["eot"] as? Int, mine != theirs {
        #expect(eog.contains(mine) && eog.contains(theirs))
    } else {
        #expect(tok.eotID.map(Int.init) == golden["eot"] as? Int)
    }
    #expect(tok.addBOS == golden["add_bos"] as? Bool)
    #expect(tok.addEOS == golden["add_eos"] as? Bool)
    #expect(tok.endOfGenerationIDs.map(Int.init) == golden["eog"] as? [Int])

    let cases = try #require(golden["cases"] as? [[String: Any]])
    var agree = 0
    var total = 0
    for c in cases {
        let text = goldenBytes(c)
        for (key, addSpecial, parseSpecial) in [("ids_00", false, false), ("ids_11", true, true), ("ids_10", true, false)] {
            let expected = (c[key] as? [Int] ?? []).map(Int32.init)
            let got = tok.tokenize(text, addSpecial: addSpecial, parseSpecial: parseSpecial)
            total += 1
            if got == expected { agree += 1 } else { Issue.record("\(name) \(key) \(show(text)): got \(got), expected \(expected)") }
        }
        let ids = (c["ids_11"] as? [Int] ?? []).map(Int32.init)
        for (key, special) in [("detok", false), ("detok_special", true)] {
            let expected = goldenBytes(c[key])
            let got = try tok.detokenize(ids, special: special)
            total += 1
            if got == expected { agree += 1 } else { Issue.record("\(name) \(key) \(show(text)): got \(show(got)), expected \(show(expected))") }
        }
    }
    var piecesAgree = 0
    let pieces = try #require(golden["pieces"] as? [[String: Any]])
    for p in pieces {
        let id = Int32(p["id"] as? Int ?? -1)
        let plain = try tok.piece(id, special: false)
        let special = try tok.piece(id, special: true)
        if plain == goldenBytes(p["piece"]) && special == goldenBytes(p["special"]) { piecesAgree += 1 } else {
            Issue.record("\(name) piece \(id): got \(show(plain)) / \(show(special)), expected \(show(goldenBytes(p["piece"]))) / \(show(goldenBytes(p["special"])))")
        }
    }
    print("golden \(name): \(agree)/\(total) tokenize+detokenize cases, \(piecesAgree)/\(pieces.count) pieces agree with llama.cpp")
}
