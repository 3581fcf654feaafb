import LeapCore

// Pre-tokenizers of byte-level BPE vocabularies, chosen by `tokenizer.ggml.pre`. Each one is a list of
// split rules applied in sequence as llama.cpp does (unicode_regex_split): every rule re-splits each piece
// produced by the previous one, and text between two matches of a rule is kept as a piece of its own.
// The rules are written by hand after the regexes; see SplitRules.swift.

/// One regex of a pre-tokenizer.
enum SplitRule: Sendable {
    /// `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)` (GPT-2).
    case gpt2
    /// `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
    case llama3
    /// The LLAMA3 regex with `\p{N}` instead of `\p{N}{1,3}` (Qwen2).
    case qwen2
    /// The Qwen2 regex where letter runs also take combining marks: `[\p{L}\p{M}]+` (Qwen3.5).
    case qwen35
    /// `\p{N}`: every digit its own piece.
    case eachNumber
    /// `\p{N}+`
    case numberRun
    /// `[0-9][0-9][0-9]`
    case asciiDigitTriples
    /// `[\p{P}<ascii>]+` where `<ascii>` are extra ASCII symbols (falcon, default).
    case punctuationRun(extra: [UInt8])
    /// `[\r\n]`
    case lineBreak
    /// `\s?[<class>]+`
    case optionalSpaceThenRun(CharacterClass)
    /// `\s+$`
    case trailingWhitespace
    /// `[<class>]+`
    case run(CharacterClass)
    /// ` ?[^(\s|.,!?…。，、।۔،)]+` (BLOOM, Poro, GPT3-Finnish, Viking).
    case bloom
    /// `[^\n]+|[\n]+`
    case newlineRuns
}

/// A set of codepoints: category flags (`\p{L}`...) and literal ranges, as the regexes spell them.
struct CharacterClass: Sendable {
    var flags: UInt8 = 0
    var ranges: [ClosedRange<UInt32>] = []

    @inline(__always)
    func contains(_ cp: UInt32, _ f: UInt8) -> Bool {
        if f & flags != 0 { return true }
        for r in ranges where r.contains(cp) { return true }
        return false
    }
}

/// What `tokenizer.ggml.pre` selects: split rules plus llama.cpp's per-type options.
struct PreTokenizer: Sendable {
    var name: String
    var rules: [SplitRule]
    /// A piece that is itself a vocabulary entry is emitted whole, without merges (Llama 3 style).
    var ignoreMerges = false
    /// Whole-sequence detokenization applies clean_up_tokenization_spaces.
    var cleanSpaces = true
    /// Default of `add_bos_token` when the metadata does not say.
    var addBOS = false
    /// The BOS id is cleared (ChatGLM).
    var noBOS = false

    /// Names llama.cpp accepts that this implementation covers.
    static let supportedNames: [String] = [
        "default", "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
        "jina-v5-nano", "dbrx", "smaug-bpe", "chatglm-bpe", "glm4", "glm5", "deepseek-llm", "deepseek-coder",
        "falcon", "mpt", "starcoder", "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es",
        "jina-v2-de", "a.x-4.0", "mellum", "modern-bert", "exaone4", "olmo", "jais", "trillion",
        "granite-docling", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2",
        "qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez", "stablelm2", "hunyuan", "solar-open",
        "grok-2", "qwen35", "bloom", "gpt3-finnish", "poro-chat", "viking", "laguna",
    ]

    static func named(_ pre: String?) throws -> PreTokenizer {
        let name = pre ?? "default"
        let gpt2Default = SplitRule.punctuationRun(extra: Array("$+<=>^~|".utf8))
        switch name {
        case "", "default":
            return PreTokenizer(name: "default", rules: [gpt2Default, .gpt2, .numberRun, .asciiDigitTriples])
        case "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano":
            return PreTokenizer(name: name, rules: [.llama3], ignoreMerges: true, addBOS: true)
        case "dbrx", "smaug-bpe":
            return PreTokenizer(name: name, rules: [.llama3])
        case "chatglm-bpe":
            return PreTokenizer(name: name, rules: [.llama3], noBOS: true)
        case "glm4", "glm5":
            return PreTokenizer(name: name, rules: [.llama3], ignoreMerges: true, noBOS: true)
        case "deepseek-llm":
            return PreTokenizer(
                name: name,
                rules: [
                    .lineBreak, .optionalSpaceThenRun(deepseekLetters), .optionalSpaceThenRun(deepseekPunctuation),
                    .trailingWhitespace, .run(deepseekCJK), .numberRun,
                ],
                cleanSpaces: false)
        case "deepseek-coder":
            return PreTokenizer(
                name: name,
                rules: [
                    .lineBreak, .optionalSpaceThenRun(CharacterClass(flags: CodepointClass.letter)),
                    .optionalSpaceThenRun(CharacterClass(flags: CodepointClass.punctuation)), .run(deepseekCJK),
                    .eachNumber,
                ],
                cleanSpaces: false)
        case "falcon":
            return PreTokenizer(
                name: name, rules: [.punctuationRun(extra: Array("$+<=>^~|`".utf8)), .gpt2, .asciiDigitTriples])
        case "mpt", "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0",
            "mellum", "modern-bert", "exaone4", "olmo", "jais":
            return PreTokenizer(name: name, rules: [.gpt2])
        case "trillion", "granite-docling":
            return PreTokenizer(name: name, rules: [.gpt2], cleanSpaces: false)
        case "starcoder", "refact", "codeshell", "exaone", "minerva-7b", "mellum2":
            return PreTokenizer(name: name, rules: [.eachNumber, .gpt2])
        case "command-r", "smollm":
            return PreTokenizer(name: name, rules: [.eachNumber, .gpt2], cleanSpaces: false)
        case "qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "hunyuan", "solar-open", "grok-2":
            return PreTokenizer(name: name, rules: [.qwen2], cleanSpaces: false)
        case "megrez", "stablelm2":
            return PreTokenizer(name: name, rules: [.qwen2])
        case "qwen35":
            return PreTokenizer(name: name, rules: [.qwen35], cleanSpaces: false)
        case "bloom", "gpt3-finnish":
            return PreTokenizer(name: name, rules: [.bloom])
        case "poro-chat":
            return PreTokenizer(name: name, rules: [.bloom], cleanSpaces: false)
        case "viking":
            return PreTokenizer(name: name, rules: [.bloom, .eachNumber], cleanSpaces: false)
        case "laguna":
            return PreTokenizer(name: name, rules: [.newlineRuns, .qwen2], cleanSpaces: false)
        default:
            throw LeapError.unsupported(
                "tokenizer.ggml.pre = '\(name)' is not supported; supported pre-tokenizers: "
                    + supportedNames.joined(separator: ", "))
        }
    }
}

// deepseek-llm's literal classes (from its tokenizer.json), as codepoint ranges.
private let deepseekLetters = CharacterClass(ranges: [
    0x41...0x5A, 0x61...0x7A, 0xB5...0xB5, 0xC0...0xD6, 0xD8...0xF6, 0xF8...0x1BA,
    0x1BC...0x1BF, 0x1C4...0x293, 0x295...0x2AF, 0x370...0x373, 0x376...0x376, 0x377...0x377,
    0x37B...0x37D, 0x37F...0x37F, 0x386...0x386, 0x388...0x38A, 0x38C...0x38C, 0x38E...0x3A1,
    0x3A3...0x3F5, 0x3F7...0x481, 0x48A...0x52F, 0x531...0x556, 0x10A0...0x10C5, 0x13A0...0x13F5,
    0x13F8...0x13FD, 0x1C90...0x1CBA, 0x1CBD...0x1CBF, 0x1D00...0x1D2B, 0x1D6B...0x1D77, 0x1D79...0x1D9A,
    0x1E00...0x1F15, 0x1F18...0x1F1D, 0x1F20...0x1F45, 0x1F48...0x1F4D, 0x1F50...0x1F57, 0x1F59...0x1F59,
    0x1F5B...0x1F5B, 0x1F5D...0x1F5D, 0x1F5F...0x1F7D, 0x1F80...0x1FB4, 0x1FB6...0x1FBC, 0x1FBE...0x1FBE,
    0x1FC2...0x1FC4, 0x1FC6...0x1FCC, 0x1FD0...0x1FD3, 0x1FD6...0x1FDB, 0x1FE0...0x1FEC, 0x1FF2...0x1FF4,
    0x1FF6...0x1FFC, 0x2102...0x2102, 0x2107...0x2107, 0x210A...0x2113, 0x2115...0x2115, 0x2119...0x211D,
    0x2124...0x2124, 0x2126...0x2126, 0x2128...0x2128, 0x212A...0x212D, 0x212F...0x2134, 0x2139...0x2139,
    0x213C...0x213F, 0x2145...0x2149, 0x214E...0x214E, 0x2183...0x2183, 0x2184...0x2184, 0x2C00...0x2C7B,
    0x2C7E...0x2CE4, 0x2CEB...0x2CEE, 0x2CF2...0x2CF2, 0x2CF3...0x2CF3, 0xA640...0xA66D, 0xA680...0xA69B,
    0xA722...0xA76F, 0xA771...0xA787, 0xA78B...0xA78E, 0xAB70...0xABBF, 0xFB00...0xFB06, 0xFB13...0xFB17,
    0xFF21...0xFF3A, 0xFF41...0xFF5A, 0x10400...0x1044F, 0x104B0...0x104D3, 0x104D8...0x104FB, 0x10C80...0x10CB2,
    0x10CC0...0x10CF2, 0x118A0...0x118DF, 0x1E900...0x1E943,
])
private let deepseekPunctuation = CharacterClass(ranges: [
    0x21...0x2F, 0x3A...0x7E, 0xFF01...0xFF0F, 0xFF1A...0xFF5E, 0x2018...0x201F, 0x3000...0x3002,
])
private let deepseekCJK = CharacterClass(ranges: [0x4E00...0x9FA5, 0x800...0x4E00, 0xAC00...0xD7FF])
