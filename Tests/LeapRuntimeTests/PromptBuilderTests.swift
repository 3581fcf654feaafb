import LeapRuntime
import LeapRuntimeTestSupport
import Testing

/// Templates print bos_token themselves, so when the tokenizer adds a BOS the text's own is dropped. It is
/// found on bytes: user content right after it that starts with a combining mark or a ZWJ makes one
/// Character with its ">", and the prompt must still not get a second BOS. (The scripted tokenizer never
/// adds BOS itself: a "<s>" among the tokens is the text's.)
@Test func theTemplatesBOSIsFoundOnBytes() throws {
    let tok = ScriptedTokenizer(pieces: ["<s>", "hi"], bytePieces: [[0xCC], [0x81], [0xE2], [0x80], [0x8D]],
                                special: ["<s>"], eog: [], addsBOS: true)
    let runner = ModelRunner(modelId: "scripted", model: ScriptedModel(vocabularySize: tok.vocabularySize, script: []),
                             tokenizer: tok, template: ChatMLTemplate(), templateIsFallback: false, contextSize: 64)
    let builder = PromptBuilder(runner: runner)
    let bos = tok.id("<s>")
    for text in ["<s>hi", "<s>\u{301}hi", "<s>\u{200D}hi"] {
        #expect(try !builder.tokens(forText: text).contains(bos), "\(Array(text.unicodeScalars))")
    }
    // Not at the start: not the template's BOS, kept.
    #expect(try builder.tokens(forText: "hi<s>") == [tok.id("hi"), bos])
}
