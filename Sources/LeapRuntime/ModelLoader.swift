import Glibc
import LeapBundles
import LeapChatTemplate
import LeapCore
import LeapGGUF
import LeapJSON
import LeapModels
import LeapPromptCache
import LeapSpeech
import LeapTokenizer

// Loading a GGUF into a ModelRunner: weights (LeapModels), tokenizer (LeapTokenizer) and chat template
// (LeapChatTemplate) from the same mmap'ed file, adapted to the runtime's backend protocols.

extension ModelRunner {
    /// Loads `path` (LEAP `Leap.load(url:)`). The default context is min(trained context, 4096).
    package static func load(path: String, options: RunnerOptions = RunnerOptions()) throws -> ModelRunner {
        let file: GGUFFile
        do {
            file = try GGUFFile(path: path)
        } catch let e as LeapError where e.kind == .format {
            throw LeapError(.modelLoading, "\(path): \(e.message)")
        }
        // Companions first: a bad companion path fails before the weights are read.
        let companions = try CompanionFiles.resolve(modelPath: path, options: options)
        for reason in companions.skipped { Log.warning("\(path): \(reason)") }
        let model = try LanguageModel.load(file: file, threads: options.threads)
        let tokenizer = try Tokenizer(gguf: file)
        let embedded = try file.optionalString("tokenizer.chat_template")
        let source = options.chatTemplate ?? embedded ?? ChatTemplate.chatML
        let template: ChatTemplate
        do {
            template = try ChatTemplate(source: source)
        } catch let e as LeapError {
            throw LeapError(.modelLoading, "chat template of \(path): \(e.message)")
        }
        let trained = model.config.nCtxTrain > 0 ? model.config.nCtxTrain : 4096
        let contextSize = options.contextSize ?? min(trained, 4096)
        // The projector's encoders: a given one must work; an auto-detected one that doesn't leaves a text model.
        var media: (any MediaEncoderBackend)? = nil
        var mediaProblem: String? = nil
        if let projector = companions.mmproj {
            do {
                media = try ProjectorEncoders.load(projector: projector, textModel: model, threads: options.threads)
            } catch let e as LeapError {
                if options.mmprojPath != nil { throw LeapError(e.kind, "mmproj: \(e.message)") }
                mediaProblem = e.message
                Log.warning("\(path): detected mmproj '\(projector)' not used: \(e.message)")
            }
        }
        // Audio output needs both LFM2.5-Audio files; given ones must load, detected ones that don't are left out.
        var speech: SpeechOutputModel? = nil
        if let vocoder = companions.audioDecoder, let detokenizer = companions.audioTokenizer {
            do {
                speech = try SpeechOutputModel(vocoderPath: vocoder, tokenizerPath: detokenizer)
            } catch let e as LeapError {
                if options.audioDecoderPath != nil || options.audioTokenizerPath != nil {
                    throw LeapError(e.kind, "audio decoder: \(e.message)")
                }
                Log.warning("\(path): detected audio decoder '\(vocoder)' / tokenizer '\(detokenizer)' not used: \(e.message)")
            }
        }
        let draft = try options.draftModelPath.map { try DraftModel.load(path: $0, tokenizer: tokenizer, threads: options.threads) }
        // The prompt cache: its folder is checked now (a cache that cannot write fails the load).
        var cache: PromptCache? = nil
        if options.cache.enabled {
            cache = try PromptCache(options: options.cache, identity: ModelIdentity(file: file))
        }
        return ModelRunner(
            modelId: modelId(path), model: LanguageModelAdapter(model, threads: options.threads),
            tokenizer: TokenizerAdapter(tokenizer), template: TemplateAdapter(template), templateSource: source,
            templateIsFallback: options.chatTemplate == nil && embedded == nil, contextSize: contextSize,
            samplingDefaults: samplingDefaults(file, overrides: options.defaultSampling), companions: companions, media: media, mediaProblem: mediaProblem,
            speech: speech, promptCache: cache, draftModel: draft)
    }

    /// "models/SmolLM2-135M-Instruct.Q4_1.gguf" -> "SmolLM2-135M-Instruct.Q4_1".
    static func modelId(_ path: String) -> String {
        var name = String(path.split(separator: "/").last ?? Substring(path))
        if name.hasSuffix(".gguf") { name.removeLast(5) }
        return name
    }

    /// `general.sampling.*` keys (llama.cpp's convention) override the runtime's defaults, and `overrides`
    /// (a bundle's) override both.
    static func samplingDefaults(_ f: GGUFFile, overrides o: BundleSampling) -> SamplingDefaults {
        var d = SamplingDefaults()
        if let t = try? f.optionalFloat("general.sampling.temp") { d.temperature = t }
        if let p = try? f.optionalFloat("general.sampling.top_p") { d.topP = p }
        if let p = try? f.optionalFloat("general.sampling.min_p") { d.minP = p }
        if let k = try? f.optionalInt("general.sampling.top_k") { d.topK = k }
        if let r = try? f.optionalFloat("general.sampling.penalty_repeat") { d.repetitionPenalty = r }
        if let t = o.temperature { d.temperature = t }
        if let p = o.topP { d.topP = p }
        if let p = o.minP { d.minP = p }
        if let k = o.topK { d.topK = k }
        if let r = o.repetitionPenalty { d.repetitionPenalty = r }
        return d
    }
}

/// LeapModels' LanguageModel as a runtime backend.
final class LanguageModelAdapter: LanguageModelBackend, @unchecked Sendable {
    let model: LanguageModel
    let threads: Int?
    init(_ model: LanguageModel, threads: Int?) {
        self.model = model
        self.threads = threads
    }

    var architecture: String { model.config.architecture.rawValue }
    var vocabularySize: Int { model.config.nVocab }
    var trainedContextLength: Int { model.config.nCtxTrain }
    var embeddingLength: Int { model.config.nEmbd }

    func makeSession(contextSize: Int) throws -> any InferenceSessionBackend {
        InferenceSessionAdapter(try model.makeContext(ContextOptions(contextSize: contextSize, threads: threads)),
                                vocabularySize: model.config.nVocab)
    }
}

/// An InferenceContext with a writable copy of the last logits (the sampler masks them in place).
final class InferenceSessionAdapter: InferenceSessionBackend {
    let context: InferenceContext
    let logits: UnsafeMutableBufferPointer<Float>  // [n_vocab]
    /// Prompts are evaluated in chunks so that a stop request is honoured during long prefills: one forward
    /// pass each (the context's maxBatch, llama.cpp's ubatch), so the chunks split where llama.cpp splits.
    var prefillChunk: Int { context.maxBatch }
    private(set) var lastPassSequences = 1

    init(_ context: InferenceContext, vocabularySize: Int) {
        self.context = context
        logits = .allocate(capacity: vocabularySize)
        logits.initialize(repeating: 0)
    }

    deinit { logits.deallocate() }

    var contextSize: Int { context.contextSize }
    var tokenCount: Int { context.nPast }

    func evaluate(_ tokens: [Int32], shouldStop: () -> Bool) throws {
        if tokens.count == 1 {
            // A decoded token: stepped together with the other conversations of the model decoding now.
            lastPassSequences = try context.model.batcher.step(context, token: tokens[0])
            return try copyLastLogits()
        }
        var start = 0
        while start < tokens.count {
            if start > 0 && shouldStop() { throw LeapError(.cancelled, "stopped during the prompt") }
            let end = min(tokens.count, start + prefillChunk)
            try context.eval(tokens: Array(tokens[start..<end]))
            start = end
        }
        try copyLastLogits()
    }

    func evaluate(embeddings rows: [Float], outputHead: Bool, shouldStop: () -> Bool) throws {
        let E = context.model.config.nEmbd
        let step = prefillChunk * E
        var start = 0
        while start < rows.count {
            if start > 0 && shouldStop() { throw LeapError(.cancelled, "stopped during the prompt") }
            let end = min(rows.count, start + step)
            let head = outputHead || end < rows.count   // only the last pass may skip the head
            try rows.withUnsafeBufferPointer {
                try context.eval(embeddings: UnsafeBufferPointer(rebasing: $0[start..<end]), outputHead: head)
            }
            start = end
        }
        if outputHead { try copyLastLogits() }
    }

    func lastHiddenState() throws -> [Float] { Array(try context.lastHiddenState()) }

    private func copyLastLogits() throws {
        let last = try context.logits(at: -1)
        let n = min(last.count, logits.count)
        if let src = last.baseAddress, let dst = logits.baseAddress { dst.update(from: src, count: n) }
    }

    func lastLogits() -> UnsafeMutableBufferPointer<Float> { logits }

    func truncate(to n: Int) throws { try context.rewind(to: n) }

    var maxVerifiedTokens: Int { min(context.maxBatch, InferenceContext.maxVerifiedTokens) }

    func verify(_ tokens: [Int32]) throws {
        // The token and its drafts: one span of the pass stepped with the other conversations decoding now.
        lastPassSequences = try context.model.batcher.step(context, tokens: tokens)
        try selectVerified(0)
    }

    func selectVerified(_ i: Int) throws {
        let row = try context.logits(at: i)
        let n = min(row.count, logits.count)
        if let src = row.baseAddress, let dst = logits.baseAddress { dst.update(from: src, count: n) }
    }

    func endDecoding() { context.model.batcher.leave(context) }

    var stateShape: ContextStateShape? { context.stateShape }
    func captureState(positions n: Int) throws -> ContextState { try context.captureState(positions: n) }
    func restoreState(_ state: ContextState) throws { try context.restoreState(state) }
}

final class TokenizerAdapter: TokenizerBackend, @unchecked Sendable {
    let tokenizer: Tokenizer
    let bosText: String
    let eosText: String
    init(_ t: Tokenizer) {
        tokenizer = t
        bosText = t.bosID.flatMap { try? t.piece($0, special: true) }.map { String(decoding: $0, as: UTF8.self) } ?? ""
        eosText = t.eosID.flatMap { try? t.piece($0, special: true) }.map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    var vocabularySize: Int { tokenizer.vocabularySize }
    var addsBOS: Bool { tokenizer.addBOS }
    func tokenize(_ text: String, addSpecial: Bool, parseSpecial: Bool) throws -> [Int32] {
        tokenizer.tokenize(text, addSpecial: addSpecial, parseSpecial: parseSpecial)
    }
    func piece(_ token: Int32) -> [UInt8] { (try? tokenizer.piece(token, special: true)) ?? [] }
    func isSpecial(_ token: Int32) -> Bool { tokenizer.isControl(token) }
    func isEndOfGeneration(_ token: Int32) -> Bool { tokenizer.isEndOfGeneration(token) }
}

final class TemplateAdapter: ChatTemplateBackend, @unchecked Sendable {
    let template: ChatTemplate
    init(_ t: ChatTemplate) { template = t }

    func render(messages: [JSONValue], tools: [JSONValue]?, addGenerationPrompt: Bool, variables: JSONObject) throws -> String {
        var extra = variables
        let bos = extra["bos_token"]?.stringValue ?? ""
        let eos = extra["eos_token"]?.stringValue ?? ""
        extra["bos_token"] = nil
        extra["eos_token"] = nil
        return try template.render(messages: messages, tools: tools, addGenerationPrompt: addGenerationPrompt,
                                   bosToken: bos, eosToken: eos, extra: extra)
    }
}

extension ModelRunner {
    /// The engine objects behind a runner loaded from a GGUF (nil for other backends), for the low-level
    /// evaluation and tokenizer APIs.
    package var languageModel: LanguageModel? { (model as? LanguageModelAdapter)?.model }
    package var textTokenizer: Tokenizer? { (tokenizer as? TokenizerAdapter)?.tokenizer }
    package var chatTemplate: ChatTemplate? { (template as? TemplateAdapter)?.template }
    /// The CPU thread count the model was loaded with (nil = physical cores, or another backend).
    package var threads: Int? { (model as? LanguageModelAdapter)?.threads }
}
