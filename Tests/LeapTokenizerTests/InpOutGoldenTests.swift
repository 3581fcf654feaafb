import Foundation
import LeapTokenizer
import Testing

// llama.cpp's own vocabulary tests: models/ggml-vocab-<name>.gguf with .inp texts and .out token ids
// (tokenize with add_special = false, parse_special = false).

let inpOutVocabs = [
    "llama-bpe", "qwen2", "gpt-2", "starcoder", "deepseek-llm", "deepseek-coder", "falcon", "refact", "mpt",
    "command-r", "llama-spm", "phi-3", "qwen35",
]

@Test(.enabled(if: vocabsDir != nil, "llama.cpp vocabularies absent: run scripts/fetch-vocabs.sh"),
      arguments: inpOutVocabs)
func llamaCppInpOutGoldens(name: String) throws {
    let base = try #require(vocabsDir).appendingPathComponent("ggml-vocab-\(name).gguf")
    let tokenizer = try Tokenizer(path: base.path)
    let cases = try readInpOut(base)
    #expect(cases.count > 10)
    var agree = 0
    for c in cases {
        let got = tokenizer.tokenize(c.text, addSpecial: false, parseSpecial: false)
        if got == c.ids { agree += 1 } else {
            Issue.record("\(name): \(String(decoding: c.text, as: UTF8.self).debugDescription): got \(got), expected \(c.ids)")
        }
    }
    print("ggml-vocab-\(name): \(agree)/\(cases.count) .inp/.out cases agree")
}
