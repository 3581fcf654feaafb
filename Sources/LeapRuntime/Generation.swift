import Glibc
import LeapCore
import LeapJSON
import LeapMessages
import LeapSampling

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

    private var sampler: Sampler
    private var router = PassThroughRouter()
    private var assembler = UTF8Assembler()
    private var generated: [Int32] = []
    private var stats = GenerationStats()
    private var startTime = 0.0
    private var firstTokenTime = 0.0

    init(conversation: Conversation, options: GenerationOptions) {
        self.conversation = conversation
        self.options = options
        self.runner = conversation.runner
        self.sampler = Sampler(params: Generation.samplerParams(options, runner.samplingDefaults))
    }

    deinit {
        if state != .done { conversation.finishGenerating() }
    }

    /// The next event, or nil once `.complete` has been returned. Throws when generation fails; the
    /// stream is then over and no assistant message is added.
    package func next() throws -> GenerationEvent? {
        while queueHead == queue.count && state != .done {
            do {
                try step()
            } catch {
                state = .done
                conversation.finishGenerating()
                throw error
            }
        }
        guard queueHead < queue.count else { return nil }
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
            finish(.interrupted)
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
        let prompt = try PromptBuilder(runner: runner).tokens(for: history, tools: conversation.functions, options: options)
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
        } catch {
            // The cache may be half-updated: start from scratch next turn.
            conversation.sessionTokens = []
            conversation.session = nil
            throw error
        }
        sampler.accept(contentsOf: prompt)
        state = .running
        if conversation.stopRequested.isSet { finish(.interrupted) }
    }

    private func decodeOne() throws {
        if conversation.stopRequested.isSet { return finish(.interrupted) }
        if let maxTokens = options.maxTokens, generated.count >= maxTokens { return finish(.maxTokens) }
        guard let session = conversation.session else { throw LeapError(.internal, "generation lost its session") }
        let logits = session.lastLogits()
        let token = sampler.sample(logits: UnsafeBufferPointer(logits))
        if generated.isEmpty { firstTokenTime = monotonicSeconds() }
        if runner.tokenizer.isEndOfGeneration(token) { return finish(.stop) }
        generated.append(token)
        sampler.accept(token)
        route(token)
        if session.tokenCount + 1 > session.contextSize { return finish(.exceedContext) }
        do {
            try session.evaluate([token], shouldStop: { false })
            conversation.sessionTokens.append(token)
        } catch {
            conversation.sessionTokens = []
            conversation.session = nil
            throw error
        }
    }

    private func route(_ token: Int32) {
        let special = runner.tokenizer.isSpecial(token)
        let bytes = runner.tokenizer.piece(token)
        if special {
            let pending = assembler.flush()
            if !pending.isEmpty { emit(router.feed(pending, special: false)) }
            emit(router.feed(String(decoding: bytes, as: UTF8.self), special: true))
        } else {
            let text = assembler.append(bytes)
            if !text.isEmpty { emit(router.feed(text, special: false)) }
        }
    }

    private func emit(_ events: [GenerationEvent]) {
        queue.append(contentsOf: events)
    }

    private func finish(_ reason: GenerationFinishReason) {
        let rest = assembler.flush()
        if !rest.isEmpty { emit(router.feed(rest, special: false)) }
        let end = monotonicSeconds()
        stats.completionTokens = generated.count
        if firstTokenTime > 0 {
            stats.timeToFirstToken = firstTokenTime - startTime
            let decodeTime = end - firstTokenTime
            stats.tokensPerSecond = generated.count > 1 && decodeTime > 0 ? Double(generated.count - 1) / decodeTime : 0
        }
        let message = router.finish()
        if reason != .error { conversation.appendAssistant(message) }
        state = .done
        conversation.finishGenerating()
        emit([.complete(message: message, finishReason: reason, stats: stats)])
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

/// Until tool-call / reasoning routing lands: text as chunks, special tokens dropped.
struct PassThroughRouter {
    private var text = ""

    mutating func feed(_ piece: String, special: Bool) -> [GenerationEvent] {
        if special { return [] }
        text += piece
        return [.chunk(piece)]
    }

    mutating func finish() -> ChatMessage {
        ChatMessage(role: .assistant, content: [.text(text)])
    }
}
