import LeapCore
import LeapGGUF
import LeapModels
import LeapTokenizer

/// A second, smaller model with the target's vocabulary (LFM2-350M for LFM2-1.2B) that drafts tokens for
/// speculative decoding: greedy, so its proposal is a point mass and the generation loop's rule applies
/// (Drafting.swift). It runs on the target's thread pool (contexts of one thread count share the pool).
package final class DraftModel: @unchecked Sendable {
    package let model: LanguageModel
    package let path: String

    private init(model: LanguageModel, path: String) {
        self.model = model
        self.path = path
    }

    /// Loads `path` and checks that its vocabulary is `tokenizer`'s, token for token: a draft in another
    /// vocabulary would propose ids that mean other text. Throws `.modelLoading` naming the first difference.
    package static func load(path: String, tokenizer: Tokenizer, threads: Int?) throws -> DraftModel {
        let file: GGUFFile
        do {
            file = try GGUFFile(path: path)
        } catch let e as LeapError where e.kind == .format {
            throw LeapError(.modelLoading, "draft model \(path): \(e.message)")
        }
        let draftTokenizer = try Tokenizer(gguf: file)
        try checkSameVocabulary(draftTokenizer, tokenizer, path: path)
        let model = try LanguageModel.load(file: file, threads: threads)
        guard model.config.nVocab == tokenizer.vocabularySize else {
            throw LeapError(.modelLoading, "draft model \(path): its output has \(model.config.nVocab) tokens, the vocabulary \(tokenizer.vocabularySize)")
        }
        return DraftModel(model: model, path: path)
    }

    static func checkSameVocabulary(_ draft: Tokenizer, _ target: Tokenizer, path: String) throws {
        guard draft.vocabularySize == target.vocabularySize else {
            throw LeapError(.modelLoading, "draft model \(path): its vocabulary has \(draft.vocabularySize) tokens, the model's \(target.vocabularySize); a draft model must share the model's vocabulary")
        }
        for id in 0..<Int32(target.vocabularySize) {
            let a = try draft.piece(id, special: true), b = try target.piece(id, special: true)
            guard a == b else {
                throw LeapError(.modelLoading, "draft model \(path): token \(id) is \(String(decoding: a, as: UTF8.self).debugDescription) there and \(String(decoding: b, as: UTF8.self).debugDescription) in the model; a draft model must share the model's vocabulary")
            }
        }
    }

    /// A drafter with a context of its own (one per generation).
    func makeDrafter(contextSize: Int) throws -> DraftModelDrafter {
        DraftModelDrafter(context: try model.makeContext(contextSize: contextSize))
    }
}

/// Greedy drafts of a draft model. Its context follows the sequence: each call keeps the longest prefix it
/// shares with the history (the accepted tokens), evaluates the rest and decodes `count` tokens.
final class DraftModelDrafter: TokenDrafter {
    let context: InferenceContext
    /// The tokens in the context, position by position.
    private var evaluated: [Int32] = []

    init(context: InferenceContext) {
        self.context = context
    }

    func draft(after history: [Int32], generated: Int, count: Int) -> [Int32] {
        guard count > 0, !history.isEmpty, history.count + count <= context.contextSize else { return [] }
        var keep = 0
        while keep < evaluated.count && keep < history.count && evaluated[keep] == history[keep] { keep += 1 }
        keep = min(keep, history.count - 1)   // the last token is evaluated again for its logits
        do {
            try context.rewind(to: keep)
            evaluated.removeLast(evaluated.count - keep)
            try context.eval(tokens: Array(history[keep...]))
            evaluated.append(contentsOf: history[keep...])
            var out: [Int32] = []
            for i in 0..<count {
                let t = Self.argmax(try context.logits())
                out.append(t)
                if i + 1 < count {   // the last draft's logits are not needed
                    try context.eval(tokens: [t])
                    evaluated.append(t)
                }
            }
            return out
        } catch {
            // A drafter that cannot draft proposes nothing; the context starts afresh next time.
            context.reset()
            evaluated = []
            return []
        }
    }

    static func argmax(_ row: UnsafeBufferPointer<Float>) -> Int32 {
        var best = 0
        for i in 1..<row.count where row[i] > row[best] { best = i }
        return Int32(best)
    }
}
