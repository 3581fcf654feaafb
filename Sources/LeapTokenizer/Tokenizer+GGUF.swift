import LeapCore
import LeapGGUF

extension TokenizerVocabulary {
    /// The `tokenizer.ggml.*` metadata of a GGUF file (a vocab-only file or a full model).
    package init(gguf f: GGUFFile) throws {
        guard let model = try f.optionalString("tokenizer.ggml.model") else {
            throw LeapError.format("GGUF file '\(f.path)' has no tokenizer.ggml.model: it carries no tokenizer")
        }
        guard let tokens = try f.optionalStringArray("tokenizer.ggml.tokens") else {
            throw LeapError.format("GGUF file '\(f.path)' has no tokenizer.ggml.tokens")
        }
        self.init(model: model, pre: try f.optionalString("tokenizer.ggml.pre"), tokens: tokens.map { Array($0.utf8) })
        tokenTypes = try f.optionalInt32Array("tokenizer.ggml.token_type")
        scores = try f.optionalFloatArray("tokenizer.ggml.scores")
        merges = try f.optionalStringArray("tokenizer.ggml.merges")?.map { Array($0.utf8) }
        bosID = try f.optionalUInt32("tokenizer.ggml.bos_token_id")
        eosID = try f.optionalUInt32("tokenizer.ggml.eos_token_id")
        eotID = try f.optionalUInt32("tokenizer.ggml.eot_token_id")
        eomID = try f.optionalUInt32("tokenizer.ggml.eom_token_id")
        unknownID = try f.optionalUInt32("tokenizer.ggml.unknown_token_id")
        separatorID = try f.optionalUInt32("tokenizer.ggml.seperator_token_id")
        paddingID = try f.optionalUInt32("tokenizer.ggml.padding_token_id")
        maskID = try f.optionalUInt32("tokenizer.ggml.mask_token_id")
        addBOS = try f.optionalBool("tokenizer.ggml.add_bos_token")
        addEOS = try f.optionalBool("tokenizer.ggml.add_eos_token")
        addSpacePrefix = try f.optionalBool("tokenizer.ggml.add_space_prefix")
        modelName = try f.optionalString("general.name")
    }
}

extension Tokenizer {
    package convenience init(gguf f: GGUFFile) throws {
        try self.init(vocabulary: TokenizerVocabulary(gguf: f))
    }

    /// Loads the tokenizer of the GGUF file at `path` (vocab-only files work).
    package convenience init(path: String) throws {
        try self.init(gguf: GGUFFile(path: path))
    }
}
