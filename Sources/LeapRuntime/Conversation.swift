import LeapCore
import LeapJSON
import LeapGrammar
import LeapMessages
import LeapToolCalls

/// A chat history bound to a model runner (LEAP `Conversation`).
///
/// The user message enters the history when a generation starts; the assistant message is appended when
/// the generation completes without error (also when it was interrupted). One generation at a time per
/// conversation: a second one gets `LeapError(.busy)`. Different conversations of one runner may generate
/// concurrently from different threads; each keeps its own KV cache, reused across turns.
///
/// Stop semantics: `stop()` applies to the generation running at that moment, including one that is
/// starting (it has been created by `generate` but has not evaluated its prompt yet): that generation
/// completes as interrupted at its next token boundary. A stop while idle does nothing and never carries
/// over to a later generation. `generate`, `stop` and the end of a generation change the two flags under
/// one lock, so a stop cannot fall between the busy check and the reset of a new generation.
package final class Conversation: @unchecked Sendable {
    package let runner: ModelRunner
    private let lock = Lock()
    private var _history: [ChatMessage]
    private var _functions: [LeapFunction] = []
    /// Written only under `lock` (read lock-free by the token loop and `isGenerating`).
    let generating = AtomicFlag()
    let stopRequested = AtomicFlag()

    /// The evaluation state and the prompt positions in it, and the embedding rows of the media parts in
    /// the last prompt (guarded by `generating`: only the running generation touches them).
    var session: (any InferenceSessionBackend)?
    var sessionUnits: [PromptUnit] = []
    var encodedMedia: [MediaKey: [Float]] = [:]
    /// The media parts of the history, checked and laid out when their message entered it (under `lock`).
    var mediaCache: [MediaKey: any PreparedMedia] = [:]

    init(runner: ModelRunner, history: [ChatMessage]) {
        self.runner = runner
        self._history = history
    }

    /// A snapshot of the history.
    package var history: [ChatMessage] { lock.withLock { _history } }
    /// Registered functions (they reach the chat template as OpenAI tool JSON).
    package var functions: [LeapFunction] { lock.withLock { _functions } }
    package var isGenerating: Bool { generating.isSet }

    /// Adds a message without generating (tool results, replayed turns). A part the model cannot take is
    /// refused here, and the history stays as it was.
    package func append(_ message: ChatMessage) throws {
        let (count, cache) = lock.withLock { (_history.count, mediaCache) }
        let prepared = try runner.prepareMedia(of: [message], from: count, cache: cache)
        try lock.withLock {
            guard !generating.isSet else { throw LeapError(.busy, "the conversation is generating; append after it completes") }
            _history.append(message)
            mediaCache = prepared
        }
    }

    /// Sets the history of a new conversation (its media already prepared into `mediaCache`).
    func replaceHistory(_ history: [ChatMessage]) throws {
        lock.withLock { _history = history }
    }

    /// Removes the last message (no-op when empty).
    package func removeLastMessage() throws {
        try lock.withLock {
            guard !generating.isSet else { throw LeapError(.busy, "the conversation is generating; remove messages after it completes") }
            _ = _history.popLast()
        }
    }

    /// Registers a function the model may call (LEAP: no de-duplication).
    package func registerFunction(_ function: LeapFunction) throws {
        try function.validate()
        lock.withLock { _functions.append(function) }
    }

    /// The history as a JSON array in the messages wire format.
    package func exportJSON() -> String { ChatHistoryJSON.encode(history) }

    /// Asks a running generation to stop after the current token (any thread; no-op when idle).
    package func stop() {
        lock.withLock { if generating.isSet { stopRequested.set() } }
    }

    /// Starts a generation for `message` (appended to the history now). Pull events with `next()`.
    /// The prompt is built here: a message with a part the model cannot take, a prompt that does not fit
    /// the context or a schema that does not compile is refused, and the conversation stays as it was.
    package func generate(_ message: ChatMessage, options: GenerationOptions = GenerationOptions()) throws -> Generation {
        // Compile the constraint first: a bad schema changes nothing.
        var constraint: JSONSchemaGrammar? = nil
        if let schema = options.jsonSchemaConstraint {
            do {
                constraint = try JSONSchemaGrammar(schemaText: schema)
            } catch let e as LeapError {
                throw LeapError(.invalidArgument, "json_schema_constraint: \(e.message)")
            }
        }
        let (history, functions, cache) = try lock.withLock {
            guard !generating.isSet else {
                throw LeapError(.busy, "the conversation is already generating; wait for it to complete or stop it")
            }
            stopRequested.clear()
            generating.set()
            return (_history, _functions, mediaCache)
        }
        let prompt: Prompt
        let promptText: String
        let prepared: [MediaKey: any PreparedMedia]
        do {
            prepared = try runner.prepareMedia(of: [message], from: history.count, cache: cache)
            (prompt, promptText) = try PromptBuilder(runner: runner).prompt(
                for: history + [message], tools: functions, options: options) { key, _ in
                guard let m = prepared[key] else {
                    throw LeapError(.internal, "a media part of the history was not prepared")
                }
                return m
            }
            // The cache reuse evaluates at least one prompt position to get logits.
            guard prompt.count > 0 else {
                throw LeapError(.generation, "the chat template rendered an empty prompt (\(promptText.utf8.count) bytes, 0 tokens); nothing to generate from")
            }
            guard prompt.count < runner.contextSize else {
                throw LeapError(.promptExceedsContext,
                                "The prompt exceeds the max context length of \(runner.contextSize) tokens (it has \(prompt.count) tokens).")
            }
        } catch {
            finishGenerating()
            throw error
        }
        let shared = runner.promptCache == nil ? 0
            : sharedPrefixLength(of: prompt, history: history, role: message.role, functions: functions, options: options,
                                 prepared: prepared)
        lock.withLock {
            _history.append(message)
            mediaCache = prepared.filter { prompt.media[$0.key] != nil }
        }
        return Generation(conversation: self, options: options, prompt: prompt, promptText: promptText, constraint: constraint,
                          sharedPrefix: shared)
    }

    func appendAssistant(_ message: ChatMessage) {
        lock.withLock { _history.append(message) }
    }

    /// Runs `body` with the conversation marked busy (no generation starts meanwhile). LeapError(.busy)
    /// while a generation runs.
    func whileIdle<T>(_ body: () throws -> T) throws -> T {
        try lock.withLock {
            guard !generating.isSet else { throw LeapError(.busy, "the conversation is generating; wait for it to complete") }
            generating.set()
        }
        defer { finishGenerating() }
        return try body()
    }

    func finishGenerating() {
        session?.endDecoding()
        lock.withLock { generating.clear() }
    }
}
