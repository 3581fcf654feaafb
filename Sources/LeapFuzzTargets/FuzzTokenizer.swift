import Glibc
import LeapTokenizer

/// Tokenizers: random bytes as text through a byte-level BPE vocabulary (LLAMA3 and SmolLM pre-tokenizers)
/// and a SentencePiece one, with and without special-token parsing. Must never crash, and for valid UTF-8
/// the pieces of the ids must give back the text exactly (both vocabularies have every byte as a token;
/// SentencePiece turns a literal U+2581 into a space).
package let fuzzTokenizer: FuzzTarget = (
    seeds: [
        Array("Hello world! I'm here, aren't you?\n\n\tcode(x) = 42;".utf8),
        Array("<|im_start|>user\nHi<|im_end|><s> </s> 🦙 中文 e\u{301} \r\n  ".utf8),
        Array("12345678 'S 'LL   \u{3000}\u{a0}x".utf8), [0xFF, 0xC0, 0x80, 0xE2, 0x82, 0xF4, 0x90, 0x80, 0x80],
    ],
    run: fuzzTokenizerInput)

private let fuzzTokenizers: [(Tokenizer, isBPE: Bool)] = {
    var out: [(Tokenizer, Bool)] = []
    for pre in ["lfm2", "smollm", "deepseek-llm", "falcon", "bloom"] {
        if let t = try? Tokenizer(vocabulary: fuzzBPEVocabulary(pre: pre)) { out.append((t, true)) }
    }
    if let t = try? Tokenizer(vocabulary: fuzzSPMVocabulary()) { out.append((t, false)) }
    return out
}()

func fuzzTokenizerInput(_ data: [UInt8]) {
    let valid = String(validating: data, as: UTF8.self) != nil
    // SentencePiece spells spaces as U+2581, so a literal U+2581 comes back as a space.
    let hasSpaceMark = data.indices.contains { data[$0...].starts(with: [0xE2, 0x96, 0x81]) }
    for (tok, isBPE) in fuzzTokenizers {
        for parseSpecial in [false, true] {
            let ids = tok.tokenize(data, addSpecial: true, parseSpecial: parseSpecial)
            guard let text = try? tok.detokenize(ids, special: true) else {
                fuzzFailure("detokenize threw on ids from tokenize")
            }
            var stream = StreamingDetokenizer(tokenizer: tok, special: true)
            var streamed: [UInt8] = []
            for id in ids { streamed += (try? stream.append(id)) ?? [] }
            streamed += stream.finish()
            if String(validating: streamed, as: UTF8.self) == nil {
                fuzzFailure("streaming detokenizer emitted invalid UTF-8")
            }
            // Round trip (pieces joined; BOS rendered first): byte-level BPE keeps every valid text, and the
            // SentencePiece vocabulary here adds no space prefix.
            if valid && !parseSpecial && (isBPE || !hasSpaceMark) {
                var joined: [UInt8] = []
                for id in ids.dropFirst() { joined += (try? tok.piece(id, special: true)) ?? [] }
                if joined != data {
                    fuzzFailure("round trip failed (\(isBPE ? "BPE" : "SPM")): \(data) -> \(ids) -> \(joined); detokenize gave \(text.count) bytes")
                }
            }
        }
    }
}

/// Byte-level BPE: specials, the 256 byte tokens, and a few merges.
private func fuzzBPEVocabulary(pre: String) -> TokenizerVocabulary {
    let specials = ["<|startoftext|>", "<|im_start|>", "<|im_end|>", "<|user|>"]
    var tokens = specials.map { Array($0.utf8) }
    var types: [Int32] = [3, 3, 3, 4]
    func spell(_ s: String) -> [UInt8] { Array(s.utf8).flatMap { byteLevelSpelling($0) } }
    for b in 0..<256 {
        tokens.append(byteLevelSpelling(UInt8(b)))
        types.append(1)
    }
    var merges: [[UInt8]] = []
    for (l, r) in [("H", "e"), ("He", "l"), ("l", "o"), ("Hel", "lo"), (" ", "w"), (" w", "o"), ("o", "r"), (" ", " "), ("\n", "\n"), ("1", "2")] {
        merges.append(spell(l) + [0x20] + spell(r))
        tokens.append(spell(l + r))
        types.append(1)
    }
    var v = TokenizerVocabulary(model: "gpt2", pre: pre, tokens: tokens)
    v.tokenTypes = types
    v.merges = merges
    v.bosID = 0
    v.eosID = 2
    v.addBOS = true
    return v
}

/// The GPT-2 spelling of one byte (the byte-to-unicode table, computed here independently).
private func byteLevelSpelling(_ b: UInt8) -> [UInt8] {
    let printable = (33...126).contains(b) || (161...172).contains(b) || (174...255).contains(b)
    var cp = UInt32(b)
    if !printable {
        var n: UInt32 = 0
        for x in 0..<Int(b) where !((33...126).contains(x) || (161...172).contains(x) || (174...255).contains(x)) { n += 1 }
        cp = 256 + n
    }
    return Array(String(Character(Unicode.Scalar(cp) ?? " ")).utf8)
}

/// SentencePiece-style: <unk>, <s>, </s>, 256 byte tokens, and scored pieces.
private func fuzzSPMVocabulary() -> TokenizerVocabulary {
    var tokens = [Array("<unk>".utf8), Array("<s>".utf8), Array("</s>".utf8)]
    var types: [Int32] = [2, 3, 3]
    var scores: [Float] = [0, 0, 0]
    let hex = Array("0123456789ABCDEF".utf8)
    for b in 0..<256 {
        tokens.append(Array("<0x".utf8) + [hex[b >> 4], hex[b & 15], UInt8(ascii: ">")])
        types.append(6)
        scores.append(0)
    }
    for (i, p) in ["▁", "▁t", "he", "▁the", "ll", "llo", "▁he", "▁hello", "中", "文", "<0x", "▁▁"].enumerated() {
        tokens.append(Array(p.utf8))
        types.append(1)
        scores.append(Float(-i))
    }
    var v = TokenizerVocabulary(model: "llama", tokens: tokens)
    v.tokenTypes = types
    v.scores = scores
    v.addSpacePrefix = false
    return v
}
