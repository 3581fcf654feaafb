import LeapCore
import LeapJSON
import LeapMessages
import LeapPromptCache
import LeapGrammar
import LeapSampling
import LeapSpeech
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
    /// Multimodal companion files found or given at load (validated).
    package let companions: CompanionFiles
    /// The encoders of the model's projector (images, audio), nil for a text model.
    package let media: (any MediaEncoderBackend)?
    /// Why an auto-detected projector could not be used (the model then loads as a text model).
    package let mediaProblem: String?
    /// The audio output decoder (vocoder + audio tokenizer) of a model that speaks, nil otherwise.
    package let speech: SpeechOutputModel?
    /// Saved prompt prefixes shared by the conversations (and, on disk, by other processes); nil when off.
    package let promptCache: PromptCache?
    /// The draft model of speculative decoding (same vocabulary), nil when none was loaded.
    package let draftModel: DraftModel?
    private let indexLock = Lock()
    private var _stateIdentity: ModelIdentity?
    private var _vocabularyIndex: TokenVocabularyIndex?
    /// What the last speculative generations learned (pass cost, acceptance rates), per kind of drafter (a
    /// draft model's passes include its own steps).
    private let draftingLock = Lock()
    private var draftingMemories: [ObjectIdentifier: DraftController.Memory] = [:]

    /// What the last speculative generation with this kind of drafter learned, nil before any.
    package func drafting(for drafter: any TokenDrafter) -> DraftController.Memory? {
        draftingLock.withLock { draftingMemories[ObjectIdentifier(type(of: drafter))] }
    }

    package func rememberDrafting(_ memory: DraftController.Memory, for drafter: any TokenDrafter) {
        draftingLock.withLock { draftingMemories[ObjectIdentifier(type(of: drafter))] = memory }
    }

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
                 samplingDefaults: SamplingDefaults = SamplingDefaults(), companions: CompanionFiles = CompanionFiles(),
                 media: (any MediaEncoderBackend)? = nil, mediaProblem: String? = nil, speech: SpeechOutputModel? = nil,
                 promptCache: PromptCache? = nil, draftModel: DraftModel? = nil) {
        self.modelId = modelId
        self.model = model
        self.tokenizer = tokenizer
        self.template = template
        self.templateSource = templateSource
        self.templateIsFallback = templateIsFallback
        self.contextSize = contextSize
        self.samplingDefaults = samplingDefaults
        self.companions = companions
        self.media = media
        self.mediaProblem = mediaProblem
        self.speech = speech
        self.promptCache = promptCache
        self.draftModel = draftModel
    }

    /// What saved states of this model are tied to (the prompt cache's, or computed on first use for
    /// explicitly saved conversation states); nil for a model not loaded from a GGUF file.
    package var stateIdentity: ModelIdentity? {
        if let c = promptCache { return c.identity }
        guard let file = languageModel?.file else { return nil }
        return indexLock.withLock {
            if let i = _stateIdentity { return i }
            let i = ModelIdentity(file: file)
            _stateIdentity = i
            return i
        }
    }

    package var supportsImages: Bool { media?.acceptsImages ?? false }
    package var supportsAudioInput: Bool { media?.acceptsAudio ?? false }
    package var supportsAudioOutput: Bool { speech != nil }

    /// A conversation whose history starts with `systemPrompt` (no system message when nil or empty).
    package func createConversation(systemPrompt: String? = nil) -> Conversation {
        var history: [ChatMessage] = []
        if let s = systemPrompt, !s.isEmpty { history.append(ChatMessage(role: .system, text: s)) }
        return Conversation(runner: self, history: history)
    }

    /// A conversation continuing `history` (e.g. imported from JSON). Every message is checked as
    /// `Conversation.append` checks one: a part the model cannot take fails here, not at a later turn.
    package func createConversation(history: [ChatMessage]) throws -> Conversation {
        let conversation = Conversation(runner: self, history: [])
        conversation.mediaCache = try prepareMedia(of: history, from: 0)
        try conversation.replaceHistory(history)
        return conversation
    }

    /// Positions the chat template and the media layouts turn `messages` into (with the generation
    /// prompt), as generation would.
    package func promptTokenCount(messages: [ChatMessage], functions: [LeapFunction] = []) throws -> Int {
        let cache = try prepareMedia(of: messages, from: 0)
        return try PromptBuilder(runner: self).prompt(for: messages, tools: functions, options: GenerationOptions()) { key, _ in
            guard let m = cache[key] else { throw LeapError(.internal, "media part was not prepared") }
            return m
        }.0.count
    }

    /// Checks every part of `messages` against what the model takes and prepares (decodes, lays out) their
    /// media; errors name the message (numbered from `first`) and the part. Generated audio in an
    /// assistant message is not input (the model replays the turn's text).
    package func prepareMedia(of messages: [ChatMessage], from first: Int,
                              cache: [MediaKey: any PreparedMedia] = [:]) throws -> [MediaKey: any PreparedMedia] {
        var out = cache
        for (i, m) in messages.enumerated() {
            for (j, part) in m.content.enumerated() {
                let isImage: Bool
                switch part {
                case .text: continue
                case .image: isImage = true
                case .audio, .audioPCMF32:
                    if m.role == .assistant { continue }
                    isImage = false
                }
                let place = "history[\(first + i)].content[\(j)]"
                let needs = isImage ? "an image part needs a vision encoder" : "an audio part needs an audio encoder"
                guard let media, isImage ? media.acceptsImages : media.acceptsAudio else {
                    throw LeapError(.unsupported, "\(place): \(needs); \(projectorSummary)")
                }
                let key = MediaKey(part: part)
                if out[key] != nil { continue }
                do {
                    out[key] = try media.prepare(part)
                } catch let e as LeapError {
                    throw LeapError(e.kind, "\(place): \(e.message)")
                }
            }
        }
        return out
    }
}
