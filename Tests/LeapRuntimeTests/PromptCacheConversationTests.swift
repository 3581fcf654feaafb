import CLeapKernels
import Glibc
import LeapCore
import LeapMessages
import LeapPromptCache
import LeapRuntime
import LeapTestFiles
import Testing

/// The prompt cache in conversations, on the tiny random-weight LFM2 file (real tokenizer and chat
/// template): a later runner on the same folder (a restarted app) restores the system prompt's state and
/// continues exactly as a runner without a cache; media prefixes hit by content; explicit save / restore.
/// The scalar kernel path makes "exactly" hold for any batch split (the cache changes where the prompt is
/// split); the cache keeps its own two-part split either way.
@Suite(.serialized) struct PromptCacheConversationTests {
    static let model = fixturesRoot + "/models/lfm2-tiny-f32.gguf"
    static let system = "You are a careful assistant. Answer in one short sentence, and never mention the weather."

    static func options(cache root: String?, mmproj: String? = nil) -> RunnerOptions {
        var o = RunnerOptions()
        o.contextSize = 512
        if let root { o.cache = PromptCacheOptions(path: root, enabled: true) }
        o.mmprojPath = mmproj
        return o
    }

    static func greedy(_ n: Int = 12) -> GenerationOptions {
        var o = GenerationOptions()
        o.temperature = 0
        o.repetitionPenalty = 1
        o.maxTokens = n
        return o
    }

    static func run(_ conv: Conversation, _ message: ChatMessage) throws -> (String, GenerationStats) {
        let g = try conv.generate(message, options: greedy())
        var text = ""
        var stats: GenerationStats?
        while let e = try g.next() {
            if case .chunk(let t) = e { text += t }
            if case .complete(_, _, let s) = e { stats = s }
        }
        guard let stats else { throw LeapError(.internal, "the generation did not complete") }
        return (text, stats)
    }

    static func run(_ conv: Conversation, _ text: String) throws -> (String, GenerationStats) {
        try run(conv, ChatMessage(role: .user, text: text))
    }

    static func withScalarKernels<T>(_ body: () throws -> T) rethrows -> T {
        lk_set_thread_isa(Int32(LK_ISA_SCALAR))
        defer { lk_set_thread_isa(-1) }
        return try body()
    }

    static func temporaryFolder() -> String {
        var template = Array("/tmp/leap-conv-cache-XXXXXX".utf8CString)
        return template.withUnsafeMutableBufferPointer { buf -> String in
            guard let base = buf.baseAddress, mkdtemp(base) != nil else { return "/tmp/leap-conv-cache-\(getpid())" }
            return String(cString: base)
        }
    }

    static func snapshots(in folder: String?) -> [String] {
        guard let folder, let dir = opendir(folder) else { return [] }
        defer { closedir(dir) }
        var out: [String] = []
        while let e = readdir(dir) {
            let n = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            if n.hasSuffix(".snap") { out.append(n) }
        }
        return out
    }

    /// A stateless client sending the same request twice (on the default kernels, where a position inside a
    /// batch and the same position alone can differ in the last bits): the second restores the prompt but
    /// its last position from memory and evaluates that one alone, as the first did, so every token's
    /// log-probabilities are the first request's bit for bit.
    @Test func aRepeatedRequestGetsTheFirstOnesLogitsBitForBit() throws {
        let runner = try ModelRunner.load(path: Self.model, options: Self.options(cache: Self.temporaryFolder()))
        var options = Self.greedy(16)
        options.topLogprobs = 5
        func request() throws -> ([SampledToken], GenerationStats) {
            let g = try runner.createConversation(systemPrompt: Self.system)
                .generate(ChatMessage(role: .user, text: "Name three rivers of Europe."), options: options)
            var tokens: [SampledToken] = []
            while let e = try g.next() {
                if case .token(let t) = e { tokens.append(t) }
                if case .complete(_, _, let stats) = e { return (tokens, stats) }
            }
            throw LeapError(.internal, "the generation did not complete")
        }
        let (first, firstStats) = try request()
        let (second, secondStats) = try request()
        #expect(secondStats.cachedPromptTokens == firstStats.promptTokens + firstStats.cachedPromptTokens - 1,
                "the second request restores all of the prompt but its last position")
        #expect(first.count == 16 && second == first)
    }

    @Test func aRestartedRunnerRestoresTheSystemPromptAndContinuesExactly() throws {
        try Self.withScalarKernels {
            let root = Self.temporaryFolder()
            let plain = try ModelRunner.load(path: Self.model, options: Self.options(cache: nil))
            let (expected, plainStats) = try Self.run(plain.createConversation(systemPrompt: Self.system), "What is two plus two?")
            #expect(plainStats.cachedPromptTokens == 0)

            // First launch: a miss, the system prompt's snapshot is written.
            do {
                let first = try ModelRunner.load(path: Self.model, options: Self.options(cache: root))
                let (text, stats) = try Self.run(first.createConversation(systemPrompt: Self.system), "What is two plus two?")
                #expect(stats.cachedPromptTokens == 0)
                #expect(text == expected)
                first.promptCache?.flush()
                #expect(Self.snapshots(in: first.promptCache?.folder).count == 1)
            }
            // Second launch: the snapshot from disk; another question shares it as well (from memory).
            let second = try ModelRunner.load(path: Self.model, options: Self.options(cache: root))
            let cache = try #require(second.promptCache)
            let (text, stats) = try Self.run(second.createConversation(systemPrompt: Self.system), "What is two plus two?")
            #expect(text == expected)
            #expect(stats.cachedPromptTokens > 20, "the system prompt's positions are restored")
            #expect(stats.promptTokens + stats.cachedPromptTokens == plainStats.promptTokens)
            #expect(cache.counters.diskHits == 1)
            let (other, otherStats) = try Self.run(second.createConversation(systemPrompt: Self.system), "Name a colour.")
            let (otherExpected, _) = try Self.run(plain.createConversation(systemPrompt: Self.system), "Name a colour.")
            #expect(other == otherExpected)
            #expect(otherStats.cachedPromptTokens == stats.cachedPromptTokens)
            #expect(cache.counters.memoryHits == 1)
            // Another system prompt misses.
            let (_, missStats) = try Self.run(second.createConversation(systemPrompt: "Another system prompt."), "Hi")
            #expect(missStats.cachedPromptTokens == 0)
        }
    }

    /// A stateless client (a server's) sends the whole history with every request. Repeating a request
    /// restores all of its prompt but the last position, which the first one left in memory; the next turn,
    /// whose history holds the answer as it was generated, restores the prompt and the answer and evaluates
    /// only the new message. Both answer as a runner without a cache.
    @Test(arguments: [Self.model, realFilePath("SmolLM2-135M-Instruct.Q4_1")])
    func aStatelessClientsNextTurnEvaluatesOnlyWhatIsNew(model: String) throws {
        guard access(model, R_OK) == 0 else { return }  // the real file is fetched by the test script
        try Self.withScalarKernels {
            let plain = try ModelRunner.load(path: model, options: Self.options(cache: nil))
            var o = Self.options(cache: nil)
            o.cache = PromptCacheOptions(enabled: true)
            o.cache.diskDisabled = true
            let runner = try ModelRunner.load(path: model, options: o)
            let question = "What is two plus two?"
            let (expected, plainStats) = try Self.run(plain.createConversation(systemPrompt: Self.system), question)
            let (first, firstStats) = try Self.run(runner.createConversation(systemPrompt: Self.system), question)
            #expect(first == expected)
            let (again, againStats) = try Self.run(runner.createConversation(systemPrompt: Self.system), question)
            #expect(again == expected)
            #expect(againStats.cachedPromptTokens == plainStats.promptTokens - 1)
            #expect(againStats.promptTokens == 1)

            let history = [ChatMessage(role: .system, text: Self.system), ChatMessage(role: .user, text: question),
                           ChatMessage(role: .assistant, text: first)]
            let next = "And three plus three?"
            let (secondExpected, secondPlain) = try Self.run(plain.createConversation(history: history), next)
            let (second, secondStats) = try Self.run(runner.createConversation(history: history), next)
            #expect(second == secondExpected)
            #expect(secondStats.promptTokens + secondStats.cachedPromptTokens == secondPlain.promptTokens)
            if first.unicodeScalars.contains("\u{FFFD}") {
                // The tiny random model's answer holds byte tokens of unfinished UTF-8 characters, which the
                // text carries as U+FFFD: the history's answer is not what it generated, and the turn restores
                // the previous prompt but its last position.
                #expect(secondStats.cachedPromptTokens == plainStats.promptTokens - 1)
            } else {
                // The answer (cut at max tokens, each of them evaluated) tokenizes as it was generated.
                #expect(secondStats.cachedPromptTokens == plainStats.promptTokens + firstStats.completionTokens)
            }
        }
    }

    /// The in-memory snapshot of a whole prompt is kept only when its KV rows take at most a quarter of the
    /// memory cap (a long context's copies would evict the shared prefixes): one byte less, and a repeated
    /// request restores the shared system prompt only.
    @Test func aPromptsSnapshotTakesAtMostAQuarterOfTheMemoryCap() throws {
        let plain = try ModelRunner.load(path: Self.model, options: Self.options(cache: nil))
        let question = "What is two plus two?"
        let (_, plainStats) = try Self.run(plain.createConversation(systemPrompt: Self.system), question)
        let shape = try #require(try plain.model.makeSession(contextSize: 512).stateShape)
        let quarter = try shape.kvBytes(positions: plainStats.promptTokens - 1)
        var restored: [Int] = []
        for cap in [4 * quarter, 4 * quarter - 1] {
            var o = Self.options(cache: nil)
            o.cache = PromptCacheOptions(enabled: true)
            o.cache.diskDisabled = true
            o.cache.maxBytesMemory = cap
            let runner = try ModelRunner.load(path: Self.model, options: o)
            _ = try Self.run(runner.createConversation(systemPrompt: Self.system), question)
            restored.append(try Self.run(runner.createConversation(systemPrompt: Self.system), question).1.cachedPromptTokens)
        }
        #expect(restored[0] == plainStats.promptTokens - 1)
        #expect(restored[1] > 0 && restored[1] < plainStats.promptTokens - 1, "the system prompt only: \(restored)")
    }

    /// Two turns about a media part; a restarted runner continuing the imported first exchange restores it
    /// all (media rows included: they are keyed by the part's content) and answers as the uncached runner.
    static func laterTurnRestoresTheExchange(model: String, mmproj: String, system: String, question: ChatMessage) throws {
        try withScalarKernels {
            let root = temporaryFolder()
            // Reference without a cache: two turns in one conversation.
            let plain = try ModelRunner.load(path: model, options: options(cache: nil, mmproj: mmproj))
            let ref = plain.createConversation(systemPrompt: system)
            let (_, firstStats) = try run(ref, question)
            let (expected, _) = try run(ref, "And again.")
            // Launch 1: the same two turns; turn 2 snapshots the first exchange, media rows included.
            var history: [ChatMessage] = []
            do {
                let first = try ModelRunner.load(path: model, options: options(cache: root, mmproj: mmproj))
                let conv = first.createConversation(systemPrompt: system)
                _ = try run(conv, question)
                let (text, _) = try run(conv, "And again.")
                #expect(text == expected)
                history = Array(conv.history.prefix(3))
            }
            // Launch 2: the exchange imported from history hits by content.
            let second = try ModelRunner.load(path: model, options: options(cache: root, mmproj: mmproj))
            let conv = try second.createConversation(history: history)
            let (text, stats) = try run(conv, "And again.")
            #expect(text == expected)
            #expect(second.promptCache?.counters.diskHits == 1)
            #expect(stats.cachedPromptTokens > firstStats.promptTokens, "the first turn's whole prompt, media rows included, is restored")
        }
    }

    @Test func aLaterTurnRestoresAnExchangeWithAudio() throws {
        let wav = try fileBytes(fixturesRoot + "/audio_encoder/clip_1s37.wav")
        try Self.laterTurnRestoresTheExchange(
            model: Self.model, mmproj: fixturesRoot + "/audio_encoder/lfm2a-512-f16-q8_0.gguf", system: "Perform ASR.",
            question: ChatMessage(role: .user, content: [.text("Transcribe this."), .audio(wav: wav)]))
    }

    @Test func aLaterTurnRestoresAnExchangeWithAnImage() throws {
        let jpeg = try fileBytes(fixturesRoot + "/vision/e2e_photo_448x320.jpg")
        try Self.laterTurnRestoresTheExchange(
            model: fixturesRoot + "/vision/lfm2vl-tiny-text-f32.gguf", mmproj: fixturesRoot + "/vision/lfm2vl-tiny-mmproj-f32.gguf",
            system: "Describe images.", question: ChatMessage(role: .user, content: [.image(jpeg: jpeg), .text("What is in it?")]))
    }

    @Test func explicitSaveAndRestore() throws {
        try Self.withScalarKernels {
            let root = Self.temporaryFolder()
            let path = root + "/state.snap"
            let runner = try ModelRunner.load(path: Self.model, options: Self.options(cache: nil))
            let conv = runner.createConversation(systemPrompt: Self.system)
            #expect(throws: LeapError.self) { try conv.saveState(to: path) }   // nothing evaluated yet
            _ = try Self.run(conv, "What is two plus two?")
            try conv.saveState(to: path)
            let (expected, _) = try Self.run(conv, "And three plus three?")

            let later = try ModelRunner.load(path: Self.model, options: Self.options(cache: nil))
            let restored = try later.createConversation(history: Array(conv.history.prefix(3)))
            try restored.loadState(from: path)
            let (text, stats) = try Self.run(restored, "And three plus three?")
            #expect(text == expected)
            #expect(stats.cachedPromptTokens > 30)

            // A damaged file and another model's file are refused; the conversation is unchanged.
            var bytes = try fileBytes(path)
            bytes[bytes.count - 3] ^= 1
            try DiskStore.writeFileAtomically(bytes, to: path + ".bad", via: path + ".tmp")
            let fresh = try later.createConversation(history: Array(conv.history.prefix(3)))
            do {
                try fresh.loadState(from: path + ".bad")
                Issue.record("a damaged state was loaded")
            } catch let e as LeapError {
                #expect(e.kind == .format)
            }
            let other = try ModelRunner.load(path: fixturesRoot + "/models/lfm2-tiny-q8_0.gguf", options: Self.options(cache: nil))
            let otherConv = try other.createConversation(history: Array(conv.history.prefix(3)))
            #expect(throws: LeapError.self) { try otherConv.loadState(from: path) }
            let (_, freshStats) = try Self.run(fresh, "And three plus three?")
            #expect(freshStats.cachedPromptTokens == 0)
            #expect(throws: LeapError.self) { try fresh.loadState(from: root + "/missing.snap") }
        }
    }

    @Test func conversationsOnTwoThreadsShareOneCache() throws {
        let root = Self.temporaryFolder()
        let runner = try ModelRunner.load(path: Self.model, options: Self.options(cache: root))
        let systems = (0..<3).map { "System prompt \($0): be brief and precise, and answer in English." }
        // Each thread asks every system prompt's question, in opposite orders, twice: every answer is a miss
        // (the prefix computed here) or a hit (restored), which evaluate the prompt in the same two parts,
        // so the two threads' answers agree exactly on any kernel path.
        let results = ThreadResults()
        let threads = (0..<2).map { t in
            spawn {
                for round in 0..<2 {
                    for i in (t == 0 ? [0, 1, 2] : [2, 1, 0]) {
                        do {
                            let (text, stats) = try Self.run(runner.createConversation(systemPrompt: systems[i]), "Question?")
                            results.add(t, i, text, stats.cachedPromptTokens, round)
                        } catch {
                            results.fail("\(error)")
                        }
                    }
                }
            }
        }
        for th in threads { pthread_join(th, nil) }
        #expect(results.failures.isEmpty, "\(results.failures)")
        for i in 0..<3 { #expect(Set(results.texts(of: i)).count == 1, "system prompt \(i): \(results.texts(of: i))") }
        #expect(results.secondRoundAllHit, "every second-round answer restores its system prompt")
    }
}

private final class ThreadBody {
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
}

/// Runs `body` on a new thread.
private func spawn(_ body: @escaping () -> Void) -> pthread_t {
    var t = pthread_t()
    let arg = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    pthread_create(&t, nil, { p in
        guard let p else { return nil }
        Unmanaged<ThreadBody>.fromOpaque(p).takeRetainedValue().body()
        return nil
    }, arg)
    return t
}

private final class ThreadResults: @unchecked Sendable {
    private let lock = Lock()
    private var answers: [(thread: Int, system: Int, text: String, cached: Int, round: Int)] = []
    private var errors: [String] = []
    func add(_ t: Int, _ i: Int, _ text: String, _ cached: Int, _ round: Int) { lock.withLock { answers.append((t, i, text, cached, round)) } }
    func fail(_ e: String) { lock.withLock { errors.append(e) } }
    var failures: [String] { lock.withLock { errors } }
    func texts(of i: Int) -> [String] { lock.withLock { answers.filter { $0.system == i }.map(\.text) } }
    var secondRoundAllHit: Bool { lock.withLock { answers.filter { $0.round == 1 }.allSatisfy { $0.cached > 0 } && answers.count == 12 } }
}
