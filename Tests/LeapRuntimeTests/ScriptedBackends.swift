import LeapCore
import LeapJSON
import LeapRuntime

/// A vocabulary of literal pieces; `tokenize` is greedy longest-match (enough for ChatML prompts).
final class ScriptedTokenizer: TokenizerBackend {
    let pieces: [[UInt8]]
    let special: Set<Int32>
    let eog: Set<Int32>
    var vocabularySize: Int { pieces.count }
    let bosText = "<s>"
    let eosText = "<|im_end|>"
    let addsBOS = false

    init(pieces: [String], bytePieces: [[UInt8]] = [], special: Set<String>, eog: Set<String>) {
        self.pieces = pieces.map { Array($0.utf8) } + bytePieces
        self.special = Set(pieces.enumerated().filter { special.contains($0.element) }.map { Int32($0.offset) })
        self.eog = Set(pieces.enumerated().filter { eog.contains($0.element) }.map { Int32($0.offset) })
    }

    func id(_ s: String) -> Int32 { Int32(pieces.firstIndex(of: Array(s.utf8)) ?? -1) }

    func tokenize(_ text: String, addSpecial: Bool, parseSpecial: Bool) throws -> [Int32] {
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

    func piece(_ token: Int32) -> [UInt8] { pieces[Int(token)] }
    func isSpecial(_ token: Int32) -> Bool { special.contains(token) }
    func isEndOfGeneration(_ token: Int32) -> Bool { eog.contains(token) }
}

/// ChatML, written out by hand.
final class ChatMLTemplate: ChatTemplateBackend {
    func render(messages: [JSONValue], tools: [JSONValue]?, addGenerationPrompt: Bool, variables: JSONObject) throws -> String {
        var s = ""
        for m in messages {
            s += "<|im_start|>" + (m["role"]?.stringValue ?? "") + "\n" + (m["content"]?.stringValue ?? "") + "<|im_end|>\n"
        }
        if addGenerationPrompt { s += "<|im_start|>assistant\n" }
        return s
    }
}

/// A "model" whose logits always favour the next token of a script; it advances when that token is
/// evaluated. Records what it was asked to do so tests can check cache reuse.
final class ScriptedModel: LanguageModelBackend {
    let vocabularySize: Int
    let architecture = "scripted"
    let trainedContextLength = 4096
    var script: [Int32]
    /// Script tokens that end a turn; a new prompt moves the script past them.
    var turnEnds: Set<Int32> = []
    var sessions: [ScriptedSession] = []

    init(vocabularySize: Int, script: [Int32]) {
        self.vocabularySize = vocabularySize
        self.script = script
    }

    func makeSession(contextSize: Int) throws -> any InferenceSessionBackend {
        let s = ScriptedSession(model: self, contextSize: contextSize)
        sessions.append(s)
        return s
    }
}

final class ScriptedSession: InferenceSessionBackend {
    unowned let model: ScriptedModel
    let contextSize: Int
    var tokens: [Int32] = []
    var cursor = 0
    let logits: UnsafeMutableBufferPointer<Float>
    var evaluated: [[Int32]] = []
    var truncations: [Int] = []
    /// Called before each single-token evaluate (lets tests act "between tokens").
    var onDecode: (() -> Void)?

    init(model: ScriptedModel, contextSize: Int) {
        self.model = model
        self.contextSize = contextSize
        self.logits = .allocate(capacity: model.vocabularySize)
        logits.initialize(repeating: 0)
    }

    deinit { logits.deallocate() }

    var tokenCount: Int { tokens.count }

    func evaluate(_ t: [Int32], shouldStop: () -> Bool) throws {
        evaluated.append(t)
        if t.count == 1, cursor < model.script.count, t[0] == model.script[cursor] {
            cursor += 1
            onDecode?()
        } else {
            while cursor < model.script.count && model.turnEnds.contains(model.script[cursor]) { cursor += 1 }
        }
        tokens += t
        for i in logits.indices { logits[i] = 0 }
        if cursor < model.script.count { logits[Int(model.script[cursor])] = 100 }
    }

    func lastLogits() -> UnsafeMutableBufferPointer<Float> { logits }

    func truncate(to n: Int) throws {
        truncations.append(n)
        tokens.removeLast(max(0, tokens.count - n))
    }
}
