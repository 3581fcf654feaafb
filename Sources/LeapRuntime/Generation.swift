import Glibc
import LeapAudio
import LeapCore
import LeapJSON
import LeapGrammar
import LeapMessages
import LeapModels
import LeapPromptCache
import LeapSampling
import LeapSpeech
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
    /// Models that speak: which modality the turn produces next, and the session that turns the backbone's
    /// hidden states into audio frames and 24 kHz samples (nil for text output).
    private var speechTurn: SpeechTurn?
    private var speaking: SpeakingSession?
    private var audioFrames = 0
    private var stats = GenerationStats()
    /// Speculative decoding, nil when off (SpeculativeDecoding.swift).
    private var speculation: Speculation?
    private var startTime = 0.0
    private var firstTokenTime = 0.0

    /// The prompt built when the generation was created, and its rendered text.
    private let prompt: Prompt
    private let promptText: String
    /// Positions of the prompt the next turn will share (where the prompt cache snapshots it; 0 = nowhere).
    private let sharedPrefix: Int

    init(conversation: Conversation, options: GenerationOptions, prompt: Prompt, promptText: String,
         constraint: JSONSchemaGrammar? = nil, sharedPrefix: Int = 0) {
        self.conversation = conversation
        self.sharedPrefix = sharedPrefix
        self.options = options
        self.prompt = prompt
        self.promptText = promptText
        self.runner = conversation.runner
        self.matcher = constraint?.makeMatcher()
        self.sampler = Sampler(params: Generation.samplerParams(options, runner.samplingDefaults))
        self.router = ResponseStreamProcessor(options: ResponseStreamOptions(
            functionCallParser: options.functionCallParser?.parser, inlineThinkingTags: options.inlineThinkingTags,
            unparsedCallsAsText: options.unparsedFunctionCallsAsText))
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
        // Templates of reasoning models may open the think block in the generation prompt.
        var tail = Substring(promptText)
        while let last = tail.last, last.isWhitespace { tail = tail.dropLast() }
        if tail.hasSuffix("<think>") {
            router = ResponseStreamProcessor(options: ResponseStreamOptions(
                functionCallParser: options.functionCallParser?.parser, inlineThinkingTags: options.inlineThinkingTags,
                startsInReasoning: true, unparsedCallsAsText: options.unparsedFunctionCallsAsText))
        }
        let session: any InferenceSessionBackend
        if let s = conversation.session {
            session = s
        } else {
            session = try runner.model.makeSession(contextSize: runner.contextSize)
            conversation.session = session
            conversation.sessionUnits = []
        }
        // Reuse the longest common prefix of what the cache holds; evaluate at least one position for logits.
        let units = prompt.units
        var keep = 0
        let cached = conversation.sessionUnits
        while keep < cached.count && keep < units.count && cached[keep] == units[keep] { keep += 1 }
        if keep == units.count { keep -= 1 }
        let cacheable = runner.promptCache == nil ? [] : prefixUnits(units[...])
        if let cache = runner.promptCache, let shape = session.stateShape,
           let hit = cache.lookup(cacheable, minPositions: keep + 1, maxPositions: units.count - 1, shape: shape) {
            do {
                try session.restoreState(hit.state)
                conversation.sessionUnits = Array(units[0..<hit.units.count])
                keep = hit.units.count
            } catch {
                Log.warning("prompt cache: a snapshot of \(hit.units.count) positions could not be restored: \(error)")
            }
        }
        do {
            try session.truncate(to: keep)
            conversation.sessionUnits = Array(units[0..<keep])
            let t0 = monotonicSeconds()
            if let cache = runner.promptCache, sharedPrefix > keep, sharedPrefix < units.count, sharedPrefix <= cacheable.count {
                // Up to the shared prefix, its snapshot, then the rest (see PromptCaching.swift).
                try evaluatePrompt(from: keep, to: sharedPrefix, in: session)
                conversation.sessionUnits = Array(units[0..<sharedPrefix])
                if session.stateShape != nil {
                    let state = try session.captureState(positions: sharedPrefix)
                    cache.insert(PromptSnapshot(units: Array(cacheable[0..<sharedPrefix]), state: state))
                }
                try evaluatePromptForMemory(from: sharedPrefix, to: units.count, in: session)
            } else {
                try evaluatePromptForMemory(from: keep, to: units.count, in: session)
            }
            conversation.sessionUnits = units
            rememberInMemory(positions: units.count - 1, of: cacheable, in: session,
                             beyond: max(keep, sharedPrefix < units.count ? sharedPrefix : 0))
            let dt = monotonicSeconds() - t0
            stats.promptTokens = units.count - keep
            stats.cachedPromptTokens = keep
            stats.promptTokensPerSecond = dt > 0 ? Double(units.count - keep) / dt : 0
        } catch let e as LeapError where e.kind == .cancelled {
            // Stopped during the prompt: what was evaluated stays cached, and the turn completes as
            // interrupted like a stop at any other token boundary.
            let evaluated = min(max(session.tokenCount, keep), units.count)
            conversation.sessionUnits = Array(units[0..<evaluated])
            stats.promptTokens = evaluated - keep
            stats.cachedPromptTokens = keep
            state = .running
            return try finish(.interrupted)
        } catch {
            // The cache may be half-updated: start from scratch next turn.
            conversation.sessionUnits = []
            conversation.session = nil
            throw error
        }
        // Media rows no longer in the prompt are not needed again.
        conversation.encodedMedia = conversation.encodedMedia.filter { prompt.media[$0.key] != nil }
        sampler.accept(contentsOf: prompt.tokens)
        try startSpeaking()
        speculation = try Speculation.start(options: options, runner: runner, session: session, prompt: prompt.tokens,
                                            speaking: speaking != nil)
        state = .running
        try collectAudio(from: session)
        if conversation.stopRequested.isSet { try finish(.interrupted) }
    }

    /// Keeps the state of the first `positions` of `units` in the prompt cache's memory (not on disk: one per
    /// request would churn it) when it holds more than the `beyond` positions cached already and takes at
    /// most a quarter of the memory cap (a long context's copies would evict the shared prefixes): the prompt but
    /// its last position (taken after the whole prompt was evaluated, so it costs no extra pass), which a
    /// request repeating the prompt or continuing it with other text than this answer restores; and at the
    /// end of the turn the prompt with the answer's evaluated tokens, which the next turn of a stateless
    /// client restores whole when the answer it sends back tokenizes the same.
    private func rememberInMemory(positions: Int, of units: [PrefixUnit], in session: any InferenceSessionBackend,
                                  beyond: Int) {
        guard let cache = runner.promptCache, let shape = session.stateShape, positions > beyond, positions <= units.count,
              positions <= session.tokenCount, cache.options.maxEntriesMemory > 0,
              let bytes = try? shape.kvBytes(positions: positions), bytes <= cache.options.maxBytesMemory / 4,
              let state = try? session.captureState(positions: positions) else { return }
        cache.insert(PromptSnapshot(units: Array(units[0..<positions]), state: state), toDisk: false)
    }

    /// Evaluates the prompt's positions start..<end; with a prompt cache, the last one in a pass of its own.
    /// The cache then keeps the prompt but its last position (`rememberInMemory`), and a request repeating the
    /// prompt restores that and evaluates the last position alone: evaluated alone here too, it gets the same
    /// logits bit for bit (inside a batch, its attention would sum in another order), so a repeated request
    /// gives the first one's answer.
    private func evaluatePromptForMemory(from start: Int, to end: Int, in session: any InferenceSessionBackend) throws {
        if runner.promptCache != nil && end - start > 1 {
            try evaluatePrompt(from: start, to: end - 1, in: session)
            try evaluatePrompt(from: end - 1, to: end, in: session)
        } else {
            try evaluatePrompt(from: start, to: end, in: session)
        }
    }

    /// Evaluates the prompt's positions from `start` on, run by run: token ids, or media rows (encoded on
    /// first use; a part whose rows are all in the KV cache already is never encoded again).
    private func evaluatePrompt(from start: Int, to end: Int, in session: any InferenceSessionBackend) throws {
        let stop: () -> Bool = { [conversation] in conversation.stopRequested.isSet }
        for (i, run) in prompt.runs(from: start, to: end).enumerated() {
            if i > 0 && stop() { throw LeapError(.cancelled, "stopped during the prompt") }
            switch run {
            case .tokens(let toks):
                try session.evaluate(toks, shouldStop: stop)
            case .rows(let key, let range):
                let rows = try encodedRows(of: key)
                let E = runner.model.embeddingLength
                guard rows.count >= range.upperBound * E else {
                    throw LeapError(.internal, "media part \(key) encoded \(rows.count / max(E, 1)) rows; its layout needs \(range.upperBound)")
                }
                try session.evaluate(embeddings: Array(rows[(range.lowerBound * E)..<(range.upperBound * E)]), shouldStop: stop)
            }
        }
    }

    private func encodedRows(of key: MediaKey) throws -> [Float] {
        if let rows = conversation.encodedMedia[key] { return rows }
        guard let media = prompt.media[key] else { throw LeapError(.internal, "media part \(key) is not in the prompt") }
        let rows = try media.encode()
        let E = runner.model.embeddingLength
        guard rows.count == media.layout.rowCount * E else {
            throw LeapError(.internal, "media part \(key) encoded \(rows.count) floats, expected \(media.layout.rowCount) rows of \(E)")
        }
        conversation.encodedMedia[key] = rows
        return rows
    }

    /// A model that speaks starts its turn in the mode the system prompt (or the options) choose.
    private func startSpeaking() throws {
        guard let model = runner.speech else { return }
        let system = conversation.history.first { $0.role == .system }?.text
        var config = SpeechConfig(systemPrompt: system, override: options.audioMode, seed: sampler.params.seed)
        if let t = options.audioTemperature { config.audioSampling.temperature = t }
        if let k = options.audioTopK { config.audioSampling.topK = k }
        guard config.mode != .textOnly else { return }
        let session = try SpeakingSession(model: model, config: config, backboneWidth: runner.model.embeddingLength,
                                          threads: runner.languageModel?.threads)
        session.startTurn()
        speaking = session
        speechTurn = SpeechTurn(config)
    }

    /// One audio frame: codes from the backbone's last hidden state, its samples out, its feedback row in.
    private func decodeAudioFrame(_ session: any InferenceSessionBackend, _ speaking: SpeakingSession) throws {
        let hidden = try session.lastHiddenState()
        let out = try hidden.withUnsafeBufferPointer { try speaking.decodeFrame(hidden: $0) }
        speechTurn?.acceptAudio(out.frame)
        audioFrames += 1
        if generated.isEmpty && audioFrames == 1 { firstTokenTime = monotonicSeconds() }
        if !out.samples.isEmpty { try deliver(AudioChunk(samples: out.samples, sampleRate: SpeakingSession.sampleRate)) }
        if session.tokenCount + 1 > session.contextSize { return try finish(.exceedContext) }
        do {
            try session.evaluate(embeddings: out.feedback, outputHead: speechTurn?.next == .text, shouldStop: { false })
            conversation.sessionUnits.append(.generatedAudio)
        } catch {
            conversation.sessionUnits = []
            conversation.session = nil
            throw error
        }
    }

    private func decodeOne() throws {
        if conversation.stopRequested.isSet { return try finish(.interrupted) }
        // Audio frames count as completion positions, as text tokens do.
        if let maxTokens = options.maxTokens, generated.count + audioFrames >= maxTokens { return try finish(.maxTokens) }
        guard let session = conversation.session else { throw LeapError(.internal, "generation lost its session") }
        if speechTurn?.next == .done { return try finish(.stop) }
        if speechTurn?.next == .audio, let speaking { return try decodeAudioFrame(session, speaking) }
        let logits = session.lastLogits()
        // Of the raw logits: the mask and the key tracker below only ever lower disallowed tokens to
        // -infinity, so the drawn token's logit is still the model's.
        let distribution = options.topLogprobs.map { LogitDistribution(logits: UnsafeBufferPointer(logits), top: $0) }
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
        if speechTurn?.acceptText(token) == .endOfTurn { return try finish(.stop) }
        generated.append(token)
        sampler.accept(token)
        // The modality markers of a speaking model switch to audio; they are not text.
        if speaking == nil || (token != SpeechTokens.audioStart && token != SpeechTokens.textEnd) {
            if let distribution { queue.append(.token(sampledToken(token, distribution, logits))) }
            try route(token)
        }
        if let matcher {
            guard runner.vocabularyIndex.acceptToken(Int(token), matcher: matcher) else {
                throw LeapError(.internal, "the sampler chose token \(token), which the JSON-schema constraint does not allow")
            }
            keys = keysAfter
            if matcher.isComplete { return try finish(.constraint) }
        }
        // Drafted positions not taken yet are not the sequence's.
        if session.tokenCount - (speculation?.pending.count ?? 0) + 1 > session.contextSize { return try finish(.exceedContext) }
        do {
            if let speculation {
                let allowed = options.maxTokens.map { $0 - generated.count - audioFrames } ?? Int.max
                try speculation.evaluate(token, in: session, maxDrafts: allowed, stats: &stats)
            } else {
                try session.evaluate([token], shouldStop: { false })
            }
            conversation.sessionUnits.append(.token(token))
        } catch {
            conversation.sessionUnits = []
            conversation.session = nil
            throw error
        }
        try collectAudio(from: session)
    }

    /// Queues the audio the last evaluation produced (after the text of the token that produced it). A
    /// chunk that breaks the turn's audio (another sample rate, non-finite samples) fails the generation.
    private func collectAudio(from session: any InferenceSessionBackend) throws {
        for chunk in session.takeGeneratedAudio() { try deliver(chunk) }
    }

    private func deliver(_ chunk: AudioChunk) throws {
        do {
            try audio.deliver(chunk)
        } catch let e as LeapError {
            throw LeapError(.generation, "generated audio: \(e.message)")
        }
        if !chunk.samples.isEmpty { queue.append(.audioSample(samples: chunk.samples, sampleRate: chunk.sampleRate)) }
    }

    private func sampledToken(_ token: Int32, _ d: LogitDistribution, _ logits: UnsafeMutableBufferPointer<Float>) -> SampledToken {
        SampledToken(id: token, bytes: runner.tokenizer.piece(token),
                     logprob: d.logprob(of: token, in: UnsafeBufferPointer(logits)),
                     top: d.top.map { (id: $0.token, bytes: runner.tokenizer.piece($0.token), logprob: $0.logprob) })
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
        if let speculation, let session = conversation.session, !speculation.dropPending(in: session) {
            conversation.sessionUnits = []   // the session holds positions the turn does not: start afresh
            conversation.session = nil
        }
        if reason != .error, let session = conversation.session, runner.promptCache != nil {
            let evaluated = prefixUnits(conversation.sessionUnits[...])
            if evaluated.count == conversation.sessionUnits.count {  // no generated audio: all content-addressed
                rememberInMemory(positions: evaluated.count, of: evaluated, in: session, beyond: prompt.units.count)
            }
        }
        let (tailEvents, summary) = router.finish()
        try emit(tailEvents)
        if let session = conversation.session { try collectAudio(from: session) }
        if let speaking {   // the waveform's last samples end the turn's audio
            let tail = speaking.finishTurn()
            self.speaking = nil
            if !tail.isEmpty { try deliver(AudioChunk(samples: tail, sampleRate: SpeakingSession.sampleRate)) }
        }
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

    static func samplerParams(_ o: GenerationOptions, _ d: SamplingDefaults) -> SamplerParams {
        var p = SamplerParams()
        p.temperature = o.temperature ?? d.temperature
        p.topP = o.topP ?? d.topP
        p.minP = o.minP ?? d.minP
        p.topK = o.topK ?? d.topK
        p.repetitionPenalty = o.repetitionPenalty ?? d.repetitionPenalty
        p.frequencyPenalty = o.frequencyPenalty ?? 0
        p.presencePenalty = o.presencePenalty ?? 0
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
