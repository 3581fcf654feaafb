import Foundation
import LeapCore
import LeapTestFiles
import LeapTokenizer
import Testing

// Properties that hold whatever the vocabulary: round trips, streaming, errors.

let tinyLFM2 = fixturesDir.appendingPathComponent("lfm2-tiny-vocab.gguf").path

/// Every golden vocabulary available here.
func availableGoldenTokenizers() throws -> [(String, Tokenizer, [[String: Any]])] {
    try goldenNames.compactMap { name in
        let url = fixturesDir.appendingPathComponent("goldens/\(name).json")
        guard let g = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any],
            let path = goldenVocabPath(g), let cases = g["cases"] as? [[String: Any]]
        else { return nil }
        return (name, try Tokenizer(path: path), cases)
    }
}

@Test func streamingDetokenizerEmitsWholeCharactersAndMatchesPieces() throws {
    for (name, tok, cases) in try availableGoldenTokenizers() {
        for c in cases {
            let ids = (c["ids_11"] as? [Int] ?? []).map(Int32.init)
            var stream = StreamingDetokenizer(tokenizer: tok)
            var streamed: [UInt8] = []
            for id in ids {
                let chunk = try stream.append(id)
                #expect(String(validating: chunk, as: UTF8.self) != nil, "\(name): chunk \(chunk) is not valid UTF-8")
                streamed += chunk
            }
            streamed += stream.finish()
            // The pieces joined (first space dropped as detokenize does), invalid bytes repaired.
            var joined: [UInt8] = []
            var first = tok.addSpacePrefix
            for id in ids {
                var p = try tok.piece(id, special: false)[...]
                if p.isEmpty { first = false; continue }
                if first && p.first == 0x20 { p = p.dropFirst() }
                first = false
                joined += p
            }
            if let valid = String(validating: joined, as: UTF8.self) {
                #expect(streamed == Array(valid.utf8), "\(name): \(show(goldenBytes(c)))")
            } else {
                #expect(String(validating: streamed, as: UTF8.self) != nil)
            }
        }
    }
}

@Test func streamingHoldsBackSplitCharacters() throws {
    let tok = try Tokenizer(path: tinyLFM2)
    // "🦙" is 4 bytes: the tiny vocabulary has no merge for it, so it is 4 single-byte tokens.
    let ids = tok.tokenize("🦙!", addSpecial: false, parseSpecial: false)
    #expect(ids.count == 5)
    var stream = StreamingDetokenizer(tokenizer: tok)
    var chunks: [[UInt8]] = []
    for id in ids { chunks.append(try stream.append(id)) }
    #expect(chunks == [[], [], [], Array("🦙".utf8), Array("!".utf8)])
    #expect(stream.finish().isEmpty)
    // A stream cut inside a character ends with U+FFFD per leftover byte.
    var cut = StreamingDetokenizer(tokenizer: tok)
    for id in ids.prefix(2) { #expect(try cut.append(id).isEmpty) }
    #expect(cut.finish() == [0xEF, 0xBF, 0xBD, 0xEF, 0xBF, 0xBD])
}

@Test func detokenizeRoundTripsValidText() throws {
    // Byte-level BPE pieces reproduce any valid UTF-8 text exactly.
    let tok = try Tokenizer(path: tinyLFM2)
    var rng = SplitMix64(seed: 42)
    let alphabet = Array("ab c\n\t'sS1234567890,.!?<|>ééü中文🦙👨‍👩‍👧 \r\n  ".unicodeScalars)
    for _ in 0..<200 {
        var s = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0..<40, using: &rng) { s.append(alphabet.randomElement(using: &rng)!) }
        let text = String(s)
        let ids = tok.tokenize(text, addSpecial: false, parseSpecial: false)
        var joined: [UInt8] = []
        for id in ids { joined += try tok.piece(id, special: true) }
        #expect(joined == Array(text.utf8), "\(text.debugDescription)")
    }
}

@Test func invalidTokenIDsThrow() throws {
    let tok = try Tokenizer(path: tinyLFM2)
    #expect(throws: LeapError.self) { try tok.detokenize([0, Int32(tok.vocabularySize)], special: false) }
    #expect(throws: LeapError.self) { try tok.piece(-1, special: true) }
    var stream = StreamingDetokenizer(tokenizer: tok)
    #expect(throws: LeapError.self) { try stream.append(Int32.max) }
}

@Test func specialTokensAndEndOfGeneration() throws {
    let tok = try Tokenizer(path: tinyLFM2)
    // LFM2 layout: <|startoftext|> = 1 is BOS, <|im_end|> = 7 is EOS, <|endoftext|> = 2 ends generation too.
    #expect(tok.bosID == 1 && tok.eosID == 7 && tok.addBOS)
    #expect(tok.isEndOfGeneration(7) && tok.isEndOfGeneration(2) && !tok.isEndOfGeneration(6))
    let chat = "<|im_start|>user\nhi<|im_end|>"
    let parsed = tok.tokenize(chat, addSpecial: true, parseSpecial: true)
    #expect(parsed.first == 1 && parsed[1] == 6 && parsed.last == 7)
    // Without parse_special the control tokens are plain text.
    let plain = tok.tokenize(chat, addSpecial: false, parseSpecial: false)
    #expect(!plain.contains(6) && !plain.contains(7))
    #expect(try tok.detokenize(parsed, special: false) == Array("user\nhi".utf8))
    #expect(try tok.detokenize(parsed, special: true) == Array(("<|startoftext|>" + chat).utf8))
}

@Test func unsupportedVocabulariesAreRejectedClearly() throws {
    var v = TokenizerVocabulary(model: "gpt2", pre: "tekken", tokens: [Array("a".utf8)])
    v.merges = []
    #expect {
        _ = try Tokenizer(vocabulary: v)
    } throws: { e in
        let e = e as? LeapError
        return e?.kind == .unsupported && (e?.message.contains("'tekken'") ?? false) && (e?.message.contains("lfm2") ?? false)
    }
    #expect(throws: LeapError.self) { _ = try Tokenizer(vocabulary: TokenizerVocabulary(model: "bert", tokens: [[0x61]])) }
    #expect(throws: LeapError.self) { _ = try Tokenizer(vocabulary: TokenizerVocabulary(model: "gpt2", tokens: [[0x61]])) }  // no merges
    #expect(throws: LeapError.self) { _ = try Tokenizer(vocabulary: TokenizerVocabulary(model: "llama", tokens: [])) }
    var short = TokenizerVocabulary(model: "llama", tokens: [[0x61], [0x62]])
    short.scores = [0]
    #expect(throws: LeapError.self) { _ = try Tokenizer(vocabulary: short) }
}

