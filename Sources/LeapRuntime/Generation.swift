import Glibc
import LeapAudio
import LeapCore
import LeapJSON
import LeapGrammar
import LeapMessages
import LeapSampling
import LeapToolCalls

/// One streamed response, pulled event by event (`next()`); both the C callback API and the C / Python
/// iterators are built on it. The prompt is evaluated on the first `next()`.
package final class Generation {
    private enum State { case notStarted, running, done }

    package let conversation: Conversation
    package let options: GenerationOptions
    private let runner: ModelRunner
    private var state = State.notStarted
    private var queue: [GenerationEvent] = []
    private var queueHead = 0
    /// The error that ended the generation, thrown once the events queued before it are out.
    private var failure: (any Error)?

    private var sampler: Sampler
    /// JSON-schema constraint: the matcher of the output so far, and the allowed-token mask buffer.
    private let matcher: GrammarMatcher?
    private var mask = TokenMask(vocabularySize: 0)
    /// Keys of the constrained JSON so far: the grammar cannot tell two free-form keys apart.
    private var keys = JSONKeyTracker()
    private var router: ResponseStreamProcessor
    /// The turn's generated audio: validated (one sample rate, finite samples) and collected for the final
    /// message; each chunk is also queued as an `.audioSample` event.
    private var audio = AudioOutputDelivery(sink: nil)
    private var generated: [Int32] = []
    private var stats = GenerationStats()
    private var startTime = 0.0
    private var firstTokenTime = 0.0

    init(conversation: Conversation, options: GenerationOptions, constraint: JSONSchemaGrammar? = nil) {
        self.conversation = conversation
        self.options = options
        self.runner = conversation.runner
        self.matcher = constraint?.makeMatcher()
        self.sampler = Sampler(params: Generation.samplerParams(options, runner.samplingDefaults))
        self.router = ResponseStreamProcessor(options: ResponseStreamOptions(
            functionCallParser: options.functionCallParser?.parser, inlineThinkingTags: options.inlineThinkingTags))
    }

    deinit {
        if state != .done { conversation.finishGenerating() }
    }

    /// The next event, or nil once `.complete` has been returned. Throws when generation fails (after the
    /// events produced before the failure); the stream is then over and no assistant message is added.
    package func next() throws -> GenerationEvent? {
        while queueHead == queue.count && state != .done {
            do {
                try step()
            } catch {
                state = .done
                conversation.finishGenerating()
                failure = error
            }
        }
        guard queueHead < queue.count else {
            if let failure {
                self.failure = nil
                throw failure
            }
            return nil
        }
        let e = queue[queueHead]
        queueHead += 1
        if queueHead == queue.count {
            queue.removeAll(keepingCapacity: true)
            queueHead = 0
        }
        return e
    }

    /// Ends the generation now: a started one completes as interrupted (its partial message is kept).
    package func close() {
        switch state {
        case .done: return
        case .notStarted:
            state = .done
            conversation.finishGenerating()
        case .running:
            do {
                try finish(.interrupted)
            } catch {
                // The cut-off response had an unparsable tool call: the generation is over either way.
                state = .done
                conversation.finishGenerating()
            }
        }
    }

    // MARK: - The token loop

    private func step() throws {
        switch state {
        case .notStarted: try start()
        case .running: try decodeOne()
        case .done: return
        }
    }

    private func start() throws {
        startTime = monotonicSeconds()
        let history = conversation.history
        try Generation.checkContentIsSupported(history, companions: runner.companions)
        let builder = PromptBuilder(runner: runner)
        let promptText = try builder.text(for: history, tools: conversation.functions, options: options)
        // Templates of reasoning models may open the think block in the generation prompt.
        var tail = Substring(promptText)
        while let last = tail.last, last.isWhitespace { tail = tail.dropLast() }
        if tail.hasSuffix("<think>") {
            router = ResponseStreamProcessor(options: ResponseStreamOptions(
                functionCallParser: options.functionCallParser?.parser, inlineThinkingTags: options.inlineThinkingTags,
                startsInReasoning: true))
        }
        let prompt = try builder.tokens(forText: promptText)
        // The cache reuse below evaluates at least one prompt token to get logits.
        guard !prompt.isEmpty else {
            throw LeapError(.generation, "the chat template rendered an empty prompt (\(promptText.utf8.count) bytes, 0 tokens); nothing to generate from")
        }
        let contextSize = runner.contextSize
        guard prompt.count < contextSize else {
            throw LeapError(.promptExceedsContext,
                            "The prompt exceeds the max context length of \(contextSize) tokens (it has \(prompt.count) tokens).")
        }
        let session: any InferenceSessionBackend
        if let s = conversation.session {
            session = s
        } else {
            session = try runner.model.makeSession(contextSize: contextSize)
            conversation.session = session
            conversation.sessionTokens = []
        }
        // Reuse the longest common prefix of what the cache holds; evaluate at least one token for logits.
        var keep = 0
        let cached = conversation.sessionTokens
        while keep < cached.count && keep < prompt.count && cached[keep] == prompt[keep] { keep += 1 }
        if keep == prompt.count { keep -= 1 }
        do {
            try session.truncate(to: keep)
            conversation.sessionTokens = Array(prompt[0..<keep])
            let fresh = Array(prompt[keep...])
            let t0 = monotonicSeconds()
            try session.evaluate(fresh, shouldStop: { [conversation] in conversation.stopRequested.isSet })
            conversation.sessionTokens = prompt
            let dt = monotonicSeconds() - t0
            stats.promptTokens = fresh.count
            stats.cachedPromptTokens = keep
            stats.promptTokensPerSecond = dt > 0 ? Double(fresh.count) / dt : 0
        } catch let e as LeapError where e.kind == .cancelled {
            // Stopped during the prompt: what was evaluated stays cached, and the turn completes as
            // interrupted like a stop at any other token boundary.
            let evaluated = min(max(session.tokenCount, keep), prompt.count)
            conversation.sessionTokens = Array(prompt[0..<evaluated])
            stats.promptTokens = evaluated - keep
            stats.cachedPromptTokens = keep
            state = .running
            return try finish(.interrupted)
        } catch {
            // The cache may be half-updated: start from scratch next turn.
            conversation.sessionTokens = []
            conversation.session = nil
            throw error
        }
        sampler.accept(contentsOf: prompt)
        state = .running
        try collectAudio(from: session)
        if conversation.stopRequested.isSet { try finish(.interrupted) }
    }

    private func decodeOne() throws {
        if conversation.stopRequested.isSet { return try finish(.interrupted) }
        if let maxTokens = options.maxTokens, generated.count >= maxTokens { return try finish(.maxTokens) }
        guard let session = conversation.session else { throw LeapError(.internal, "generation lost its session") }
        let logits = session.lastLogits()
        if let matcher {
            runner.vocabularyIndex.fillMask(for: matcher, into: &mask)
            mask.apply(to: logits)
        }
        var token = sampler.sample(logits: UnsafeBufferPointer(logits))
        var keysAfter = keys  // the key tracker once `token` is taken
        if matcher != nil {
            // A token closing a key its object already has is masked out and another one drawn (there is
            // always one: a free-form key can go on with another character).
            while !runner.tokenizer.isEndOfGeneration(token) {
                keysAfter = keys
                if keysAfter.accept(runner.tokenizer.piece(token)) { break }
                logits[Int(token)] = -.infinity
                token = sampler.sample(logits: UnsafeBufferPointer(logits))
                guard logits[Int(token)] > -.infinity else {
                    throw LeapError(.internal, "the JSON-schema constraint left no token that does not repeat an object key")
                }
            }
        }
        if generated.isEmpty { firstTokenTime = monotonicSeconds() }
        if runner.tokenizer.isEndOfGeneration(token) { return try finish(.stop) }
        generated.append(token)
        sampler.accept(token)
        try route(token)
        if let matcher {
            guard runner.vocabularyIndex.acceptToken(Int(token), matcher: matcher) else {
                throw LeapError(.internal, "the sampler chose token \(token), which the JSON-schema constraint does not allow")
            }
            keys = keysAfter
            if matcher.isComplete { return try finish(.constraint) }
        }
        if session.tokenCount + 1 > session.contextSize { return try finish(.exceedContext) }
        do {
            try session.evaluate([token], shouldStop: { false })
            conversation.sessionTokens.append(token)
        } catch {
            conversation.sessionTokens = []
            conversation.session = nil
            throw error
        }
        try collectAudio(from: session)
    }

    /// Queues the audio the last evaluation produced (after the text of the token that produced it). A
    /// chunk that breaks the turn's audio (another sample rate, non-finite samples) fails the generation.
    private func collectAudio(from session: any InferenceSessionBackend) throws {
        for chunk in session.takeGeneratedAudio() {
            do {
                try audio.deliver(chunk)
            } catch let e as LeapError {
                throw LeapError(.generation, "generated audio: \(e.message)")
            }
            if !chunk.samples.isEmpty { queue.append(.audioSample(samples: chunk.samples, sampleRate: chunk.sampleRate)) }
        }
    }

    private func route(_ token: Int32) throws {
        try emit(router.feed(runner.tokenizer.piece(token), isSpecial: runner.tokenizer.isSpecial(token)))
    }

    /// Queues routed events; a tool call that does not parse ends the generation with its error.
    private func emit(_ events: [ResponseEvent]) throws {
        for e in events {
            switch e {
            case .text(let t): queue.append(.chunk(t))
            case .reasoning(let r): queue.append(.reasoningChunk(r))
            case .functionCalls(let calls): queue.append(.functionCalls(calls))
            case .error(let error, _): throw error
            }
        }
    }

    private func finish(_ reason: GenerationFinishReason) throws {
        let (tailEvents, summary) = router.finish()
        try emit(tailEvents)
        if let session = conversation.session { try collectAudio(from: session) }
        let end = monotonicSeconds()
        stats.completionTokens = generated.count
        if firstTokenTime > 0 {
            stats.timeToFirstToken = firstTokenTime - startTime
            let decodeTime = end - firstTokenTime
            stats.tokensPerSecond = generated.count > 1 && decodeTime > 0 ? Double(generated.count - 1) / decodeTime : 0
        }
        var message = summary.assistantMessage
        // LEAP §2.8: the turn's audio follows the text part, so it stays in the history.
        if let turn = audio.buffer.finishTurn() {
            message.content.append(.audioPCMF32(samples: turn.samples, sampleRate: turn.sampleRate))
        }
        if reason != .error { conversation.appendAssistant(message) }
        state = .done
        conversation.finishGenerating()
        queue.append(.complete(message: message, finishReason: reason, stats: stats))
    }

    /// Text models cannot see images or hear audio: say so instead of silently dropping the parts, and
    /// name the projector when the model came with one (it is found and checked at load, but this engine
    /// has no vision / audio encoder to run it).
    static func checkContentIsSupported(_ history: [ChatMessage], companions: CompanionFiles = CompanionFiles()) throws {
        for (i, m) in history.enumerated() {
            for (j, part) in m.content.enumerated() {
                let what: String
                switch part {
                case .text: continue
                case .image: what = "an image part needs a vision encoder"
                case .audio, .audioPCMF32:
                    guard m.role != .assistant else { continue }  // generated audio in the history is only replayed as text
                    what = "an audio part needs an audio encoder"
                }
                let why = companions.mmproj.map {
                    "this model was loaded with the projector '\($0)' (mmproj), but this engine has no vision or audio encoder yet (text only)"
                } ?? "this is a text model (no projector: give mmproj_path or put mmproj-*.gguf next to the model), and this engine runs text models only"
                throw LeapError(.unsupported, "history[\(i)].content[\(j)]: \(what); \(why)")
            }
        }
    }

    static func samplerParams(_ o: GenerationOptions, _ d: SamplingDefaults) -> SamplerParams {
        var p = SamplerParams()
        p.temperature = o.temperature ?? d.temperature
        p.topP = o.topP ?? d.topP
        p.minP = o.minP ?? d.minP
        p.topK = o.topK ?? d.topK
        p.repetitionPenalty = o.repetitionPenalty ?? d.repetitionPenalty
        p.seed = o.rngSeed ?? randomSeed()
        return p
    }

    static func randomSeed() -> UInt64 {
        var seed: UInt64 = 0
        var n = 0
        let fd = open("/dev/urandom", O_RDONLY)
        if fd >= 0 {
            n = withUnsafeMutableBytes(of: &seed) { read(fd, $0.baseAddress, 8) }
            Glibc.close(fd)
        }
        if n != 8 { seed = UInt64(bitPattern: Int64(monotonicSeconds() * 1e9)) }
        return seed
    }
}
