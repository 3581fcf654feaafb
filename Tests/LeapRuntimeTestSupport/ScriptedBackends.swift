// Scripted runtime backends shared by the runtime and C-API tests: a literal-piece tokenizer, a hand-written
// ChatML template, and a "model" that says a fixed script (optionally with audio), so tests can drive the
// conversation runtime token by token without weights.
import LeapAudio
import LeapCore
import LeapJSON
import LeapMessages
import LeapRuntime

/// A vocabulary of literal pieces; `tokenize` is greedy longest-match (enough for ChatML prompts).
package final class ScriptedTokenizer: TokenizerBackend {
    package let pieces: [[UInt8]]
    let special: Set<Int32>
    let eog: Set<Int32>
    package var vocabularySize: Int { pieces.count }
    package let bosText = "<s>"
    package let eosText = "<|im_end|>"
    /// Whether the runtime takes the tokenizer to add BOS (this one never adds it itself).
    package let addsBOS: Bool

    package init(pieces: [String], bytePieces: [[UInt8]] = [], special: Set<String>, eog: Set<String>, addsBOS: Bool = false) {
        self.addsBOS = addsBOS
        self.pieces = pieces.map { Array($0.utf8) } + bytePieces
        self.special = Set(pieces.enumerated().filter { special.contains($0.element) }.map { Int32($0.offset) })
        self.eog = Set(pieces.enumerated().filter { eog.contains($0.element) }.map { Int32($0.offset) })
    }

    package func id(_ s: String) -> Int32 { Int32(pieces.firstIndex(of: Array(s.utf8)) ?? -1) }

    package func tokenize(_ text: String, addSpecial: Bool, parseSpecial: Bool) throws -> [Int32] {
        let b = Array(text.utf8)
        var i = 0
        var out: [Int32] = []
        while i < b.count {
            var best = -1
            var bestLen = 0
            for (id, p) in pieces.enumerated() where p.count > bestLen && i + p.count <= b.count && Array(b[i..<i + p.count]) == p {
                best = id
                bestLen = p.count
            }
            guard best >= 0 else { throw LeapError(.format, "no piece for byte \(b[i])") }
            out.append(Int32(best))
            i += bestLen
        }
        return out
    }

    package func piece(_ token: Int32) -> [UInt8] { pieces[Int(token)] }
    package func isSpecial(_ token: Int32) -> Bool { special.contains(token) }
    package func isEndOfGeneration(_ token: Int32) -> Bool { eog.contains(token) }
}

/// ChatML, written out by hand.
package final class ChatMLTemplate: ChatTemplateBackend {
    package init() {}
    package func render(messages: [JSONValue], tools: [JSONValue]?, addGenerationPrompt: Bool, variables: JSONObject) throws -> String {
        var s = ""
        for m in messages {
            s += "<|im_start|>" + (m["role"]?.stringValue ?? "") + "\n" + (m["content"]?.stringValue ?? "") + "<|im_end|>\n"
        }
        if addGenerationPrompt { s += "<|im_start|>assistant\n" }
        return s
    }
}

/// A "model" whose logits always favour the next token of a script (logit 100), with the one after it as
/// second choice (logit 50: what it says when a constraint refuses the first); it advances past the token
/// that is evaluated. Records what it was asked to do so tests can check cache reuse.
package final class ScriptedModel: LanguageModelBackend {
    package let vocabularySize: Int
    package let architecture = "scripted"
    package let trainedContextLength = 4096
    package let embeddingLength = 4
    package var script: [Int32]
    /// Script tokens that end a turn; a new prompt moves the script past them.
    package var turnEnds: Set<Int32> = []
    package var sessions: [ScriptedSession] = []
    /// Audio the model "speaks" when it evaluates script token i (keyed by script index).
    package var audio: [Int: [AudioChunk]] = [:]
    /// Prompts are evaluated in chunks of this many tokens, polling `shouldStop` in between (as the real
    /// engine does), and `onPrefillChunk` runs after each chunk.
    package var prefillChunk = Int.max
    package var onPrefillChunk: (() -> Void)?

    package init(vocabularySize: Int, script: [Int32]) {
        self.vocabularySize = vocabularySize
        self.script = script
    }

    package func makeSession(contextSize: Int) throws -> any InferenceSessionBackend {
        let s = ScriptedSession(model: self, contextSize: contextSize)
        sessions.append(s)
        return s
    }
}

package final class ScriptedSession: InferenceSessionBackend {
    package unowned let model: ScriptedModel
    package let contextSize: Int
    package var tokens: [Int32] = []
    package var cursor = 0
    let logits: UnsafeMutableBufferPointer<Float>
    package var evaluated: [[Int32]] = []
    /// Embedding rows evaluated, one array per evaluate(embeddings:) call ([n, 4]).
    package var embedded: [[Float]] = []
    package var truncations: [Int] = []
    /// Called before each single-token evaluate (lets tests act "between tokens").
    package var onDecode: (() -> Void)?
    /// Audio produced by evaluations and not yet taken.
    var pendingAudio: [AudioChunk] = []

    init(model: ScriptedModel, contextSize: Int) {
        self.model = model
        self.contextSize = contextSize
        self.logits = .allocate(capacity: model.vocabularySize)
        logits.initialize(repeating: 0)
    }

    deinit { logits.deallocate() }

    package var tokenCount: Int { tokens.count }

    package func evaluate(_ t: [Int32], shouldStop: () -> Bool) throws {
        evaluated.append(t)
        if t.count == 1, cursor < model.script.count, t[0] == model.script[cursor] {
            pendingAudio += model.audio[cursor] ?? []
            cursor += 1
            onDecode?()
        } else if t.count == 1, cursor + 1 < model.script.count, t[0] == model.script[cursor + 1] {
            pendingAudio += model.audio[cursor + 1] ?? []
            cursor += 2
            onDecode?()
        } else {
            while cursor < model.script.count && model.turnEnds.contains(model.script[cursor]) { cursor += 1 }
        }
        var start = 0
        while t.count - start > model.prefillChunk {
            if start > 0 && shouldStop() { throw LeapError(.cancelled, "stopped during the prompt") }
            tokens += t[start..<start + model.prefillChunk]
            start += model.prefillChunk
            model.onPrefillChunk?()
        }
        if start > 0 && shouldStop() { throw LeapError(.cancelled, "stopped during the prompt") }
        tokens += t[start...]
        for i in logits.indices { logits[i] = 0 }
        if cursor + 1 < model.script.count { logits[Int(model.script[cursor + 1])] = 50 }
        if cursor < model.script.count { logits[Int(model.script[cursor])] = 100 }
    }

    /// Rows stand at positions like tokens (recorded as token -1).
    package func evaluate(embeddings rows: [Float], outputHead: Bool, shouldStop: () -> Bool) throws {
        guard rows.count % model.embeddingLength == 0, !rows.isEmpty else {
            throw LeapError(.invalidArgument, "ragged embedding rows")
        }
        guard tokens.count + rows.count / model.embeddingLength <= contextSize else {
            throw LeapError(.promptExceedsContext, "rows do not fit")
        }
        embedded.append(rows)
        tokens += [Int32](repeating: -1, count: rows.count / model.embeddingLength)
        for i in logits.indices { logits[i] = 0 }
        if cursor + 1 < model.script.count { logits[Int(model.script[cursor + 1])] = 50 }
        if cursor < model.script.count { logits[Int(model.script[cursor])] = 100 }
    }

    package func takeGeneratedAudio() -> [AudioChunk] {
        defer { pendingAudio = [] }
        return pendingAudio
    }

    package func lastLogits() -> UnsafeMutableBufferPointer<Float> { logits }

    package func truncate(to n: Int) throws {
        truncations.append(n)
        tokens.removeLast(max(0, tokens.count - n))
    }
}

/// The vocabulary of the scripted runners: ChatML markers, words, tool-call and think markers, the two
/// halves of "é" (0xC3 0xA9) as separate tokens, and every printable ASCII byte.
package let scriptedWords = ["<|im_start|>", "<|im_end|>", "<think>", "</think>", "system", "user", "assistant", "\n", " ",
                             "Hello", "Hi", "there", "!", "caf", "How", "are", "you", "?", "Fine", "Be", "brief", ".",
                             "<|tool_call_start|>", "<|tool_call_end|>", "[get_weather(", "city=", "\"Paris\"", ")]", "hmm",
                             "true", "false", "{", "}", "\"ok\"", ":", "<img>", "</img>"]

/// A runner over the scripted backends saying `script` (pieces of `scriptedWords`, or "\u{C3}" / "\u{A9}"
/// for the halves of "é"); `audio[i]` is spoken when script token i is evaluated.
package func makeScriptedRunner(script: [String], audio: [Int: [AudioChunk]] = [:], contextSize: Int = 256,
                                media: (any MediaEncoderBackend)? = nil)
    -> (ModelRunner, ScriptedModel, ScriptedTokenizer) {
    let words = scriptedWords
    let tok = ScriptedTokenizer(pieces: words, bytePieces: [[0xC3], [0xA9]] + (32...126).map { [UInt8($0)] },
                                special: ["<|im_start|>", "<|im_end|>", "<think>", "</think>", "<|tool_call_start|>", "<|tool_call_end|>"],
                                eog: ["<|im_end|>"])
    func id(_ s: String) -> Int32 {
        if s == "\u{C3}" { return Int32(words.count) }
        if s == "\u{A9}" { return Int32(words.count + 1) }
        return tok.id(s)
    }
    let model = ScriptedModel(vocabularySize: tok.vocabularySize, script: script.map(id))
    model.turnEnds = [tok.id("<|im_end|>")]
    model.audio = audio
    let runner = ModelRunner(modelId: "scripted", model: model, tokenizer: tok, template: ChatMLTemplate(),
                             templateIsFallback: false, contextSize: contextSize, media: media)
    return (runner, model, tok)
}

/// A media encoder for the scripted runners: an image of n bytes is `<img>` + (n % 3 + 2) rows + `</img>`,
/// an audio part (WAV bytes or samples) is (count % 4 + 1) rows with no markers; a row's values are the
/// part's first content byte and the row index, so tests can tell rows apart. JPEG bytes starting with "BAD"
/// are refused as corrupt. Counts the encoder runs.
package final class ScriptedMediaEncoder: MediaEncoderBackend, @unchecked Sendable {
    package let acceptsImages: Bool
    package let acceptsAudio: Bool
    package let embeddingLength = 4
    package private(set) var encodeCount = 0

    package init(images: Bool = true, audio: Bool = true) {
        acceptsImages = images
        acceptsAudio = audio
    }

    final class Part: PreparedMedia, @unchecked Sendable {
        let layout: MediaLayout
        let seed: Float
        unowned let encoder: ScriptedMediaEncoder
        init(layout: MediaLayout, seed: Float, encoder: ScriptedMediaEncoder) {
            self.layout = layout
            self.seed = seed
            self.encoder = encoder
        }
        func encode() throws -> [Float] {
            encoder.encodeCount += 1
            return (0..<layout.rowCount).flatMap { r in [seed, Float(r), 0, 1] }
        }
    }

    package func prepare(_ part: ChatMessageContent) throws -> any PreparedMedia {
        switch part {
        case .image(let jpeg):
            if jpeg.starts(with: Array("BAD".utf8)) { throw LeapError(.format, "not a JPEG: corrupt data") }
            let n = jpeg.count % 3 + 2
            return Part(layout: MediaLayout(pieces: [.text("<img>"), .rows(0..<n), .text("</img>")], rowCount: n),
                        seed: Float(jpeg.first ?? 0), encoder: self)
        case .audio(let wav):
            let n = wav.count % 4 + 1
            return Part(layout: MediaLayout(pieces: [.rows(0..<n)], rowCount: n), seed: Float(wav.first ?? 0), encoder: self)
        case .audioPCMF32(let samples, _):
            let n = samples.count % 4 + 1
            return Part(layout: MediaLayout(pieces: [.rows(0..<n)], rowCount: n), seed: samples.first ?? 0, encoder: self)
        case .text:
            throw LeapError(.internal, "text is not media")
        }
    }
}
