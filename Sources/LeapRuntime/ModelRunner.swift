import LeapCore
import LeapJSON
import LeapMessages
import LeapGrammar
import LeapSampling
import LeapToolCalls

/// Sampling settings a model file recommends (`general.sampling.*`), used when a request leaves a field unset.
package struct SamplingDefaults: Sendable {
    package var temperature: Float = 0.3
    package var topP: Float = 1.0
    package var minP: Float = 0.15
    package var topK: Int = 0
    package var repetitionPenalty: Float = 1.05
    package init() {}
}

/// A loaded model with its tokenizer and chat template (LEAP `ModelRunner`): immutable and shared by every
/// conversation created from it, from any thread.
package final class ModelRunner: @unchecked Sendable {
    package let modelId: String
    package let model: any LanguageModelBackend
    package let tokenizer: any TokenizerBackend
    package let template: any ChatTemplateBackend
    /// The Jinja source of the template in use.
    package let templateSource: String
    /// True when the file had no chat template and ChatML is used instead.
    package let templateIsFallback: Bool
    /// Context size of new conversations.
    package let contextSize: Int
    package let samplingDefaults: SamplingDefaults
    /// Multimodal companion files found or given at load (validated; not used by this text engine).
    package let companions: CompanionFiles
    private let indexLock = Lock()
    private var _vocabularyIndex: TokenVocabularyIndex?

    /// The vocabulary as a trie for constrained decoding, built on first use (then shared).
    var vocabularyIndex: TokenVocabularyIndex {
        indexLock.withLock {
            if let i = _vocabularyIndex { return i }
            let n = tokenizer.vocabularySize
            var bytes: [[UInt8]] = []
            bytes.reserveCapacity(n)
            var eog: [Int] = []
            for id in 0..<n {
                let t = Int32(id)
                if tokenizer.isEndOfGeneration(t) { eog.append(id) }
                bytes.append(tokenizer.isSpecial(t) ? [] : tokenizer.piece(t))
            }
            let i = TokenVocabularyIndex(tokens: bytes, endOfGeneration: eog)
            _vocabularyIndex = i
            return i
        }
    }

    package init(modelId: String, model: any LanguageModelBackend, tokenizer: any TokenizerBackend,
                 template: any ChatTemplateBackend, templateSource: String = "", templateIsFallback: Bool, contextSize: Int,
                 samplingDefaults: SamplingDefaults = SamplingDefaults(), companions: CompanionFiles = CompanionFiles()) {
        self.modelId = modelId
        self.model = model
        self.tokenizer = tokenizer
        self.template = template
        self.templateSource = templateSource
        self.templateIsFallback = templateIsFallback
        self.contextSize = contextSize
        self.samplingDefaults = samplingDefaults
        self.companions = companions
    }

    /// A conversation whose history starts with `systemPrompt` (no system message when nil or empty).
    package func createConversation(systemPrompt: String? = nil) -> Conversation {
        var history: [ChatMessage] = []
        if let s = systemPrompt, !s.isEmpty { history.append(ChatMessage(role: .system, text: s)) }
        return Conversation(runner: self, history: history)
    }

    package func createConversation(history: [ChatMessage]) -> Conversation {
        Conversation(runner: self, history: history)
    }

    /// Tokens the chat template turns `messages` into (with the generation prompt), as generation would.
    package func promptTokenCount(messages: [ChatMessage], functions: [LeapFunction] = []) throws -> Int {
        try PromptBuilder(runner: self).tokens(for: messages, tools: functions, options: GenerationOptions()).count
    }
}
