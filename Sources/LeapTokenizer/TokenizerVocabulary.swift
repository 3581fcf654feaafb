// The `tokenizer.ggml.*` metadata a tokenizer is built from, as plain values (see Tokenizer+GGUF.swift for
// reading it from a GGUF file). Optional fields are absent from the metadata when nil; the tokenizer then
// uses llama.cpp's defaults for the model type.

package struct TokenizerVocabulary: Sendable {
    /// `tokenizer.ggml.model`: "gpt2" (byte-level BPE) or "llama" (SentencePiece-style BPE).
    package var model: String
    /// `tokenizer.ggml.pre`: the pre-tokenizer of byte-level BPE.
    package var pre: String?
    /// `tokenizer.ggml.tokens`: token texts (bytes as stored), id = index.
    package var tokens: [[UInt8]]
    /// `tokenizer.ggml.token_type`: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte.
    package var tokenTypes: [Int32]?
    /// `tokenizer.ggml.scores`: SentencePiece merge priorities.
    package var scores: [Float]?
    /// `tokenizer.ggml.merges`: `"left right"` lines, rank = index.
    package var merges: [[UInt8]]?
    package var bosID: UInt32?
    package var eosID: UInt32?
    package var eotID: UInt32?
    package var eomID: UInt32?
    package var unknownID: UInt32?
    package var separatorID: UInt32?
    package var paddingID: UInt32?
    package var maskID: UInt32?
    package var addBOS: Bool?
    package var addEOS: Bool?
    package var addSpacePrefix: Bool?
    /// `general.name`: llama.cpp keys a few per-token attributes on it (Phi-3 strips spaces after specials).
    package var modelName: String?

    package init(model: String, pre: String? = nil, tokens: [[UInt8]]) {
        self.model = model
        self.pre = pre
        self.tokens = tokens
    }
}

/// Token attributes (llama.cpp's llama_token_attr bits).
package struct TokenAttributes: OptionSet, Sendable {
    package let rawValue: UInt16
    package init(rawValue: UInt16) { self.rawValue = rawValue }

    package static let unknown = TokenAttributes(rawValue: 1 << 0)
    package static let unused = TokenAttributes(rawValue: 1 << 1)
    package static let normal = TokenAttributes(rawValue: 1 << 2)
    package static let control = TokenAttributes(rawValue: 1 << 3)
    package static let userDefined = TokenAttributes(rawValue: 1 << 4)
    package static let byte = TokenAttributes(rawValue: 1 << 5)
    package static let lstrip = TokenAttributes(rawValue: 1 << 7)
    package static let rstrip = TokenAttributes(rawValue: 1 << 8)

    /// From a `tokenizer.ggml.token_type` value.
    init(tokenType: Int32) {
        switch tokenType {
        case 1: self = .normal
        case 2: self = .unknown
        case 3: self = .control
        case 4: self = .userDefined
        case 5: self = .unused
        case 6: self = .byte
        default: self = []
        }
    }
}
