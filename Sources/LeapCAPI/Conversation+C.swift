import CLeap
import Glibc
import LeapAudio
import LeapCore
import LeapJSON
import LeapMessages
import LeapRuntime
import LeapToolCalls

// leap_conversation_*, leap_generation_*: conversations over a loaded model, with callback and pull
// streaming. Both forms drive the same `Generation` iterator.

final class ConversationBox: HandleBox {
    let conversation: Conversation
    let model: ModelBox  // keeps the model alive as long as the conversation
    init(_ conversation: Conversation, model: ModelBox) {
        self.conversation = conversation
        self.model = model
        super.init(kind: .conversation)
    }
}

/// A generation plus the storage behind the borrowed pointers of the last event.
final class GenerationBox: HandleBox {
    let generation: Generation
    let owner: ConversationBox
    var text: UnsafeMutablePointer<CChar>?
    var callsJSON: UnsafeMutablePointer<CChar>?
    var samples: [Float] = []
    var samplesPointer: UnsafeMutablePointer<Float>?
    var message: MessageBox?
    var token: CSampledToken?
    var stats = leap_generation_stats()
    var statsPointer: UnsafeMutablePointer<leap_generation_stats>
    var finished = false

    init(_ generation: Generation, owner: ConversationBox) {
        self.generation = generation
        self.owner = owner
        statsPointer = .allocate(capacity: 1)
        statsPointer.initialize(to: leap_generation_stats())
        super.init(kind: .stream)
    }

    /// Releases what the previous event pointed to.
    func clearEvent() {
        free(text)
        text = nil
        free(callsJSON)
        callsJSON = nil
        samplesPointer?.deallocate()
        samplesPointer = nil
        message = nil
        token = nil
    }

    deinit {
        clearEvent()
        statsPointer.deallocate()
        generation.close()
    }
}

func borrowConversation(_ p: OpaquePointer?) throws -> ConversationBox {
    try Handle.borrow(p, ConversationBox.self, kind: .conversation, "conversation")
}

func cStats(_ s: GenerationStats) -> leap_generation_stats {
    leap_generation_stats(
        prompt_tokens: Int64(s.promptTokens), completion_tokens: Int64(s.completionTokens),
        total_tokens: Int64(s.totalTokens), cached_prompt_tokens: Int64(s.cachedPromptTokens),
        tokens_per_second: s.tokensPerSecond, time_to_first_token: s.timeToFirstToken,
        prompt_tokens_per_second: s.promptTokensPerSecond, drafted_tokens: Int64(s.draftedTokens),
        accepted_draft_tokens: Int64(s.acceptedDraftTokens))
}

/// The most alternatives a token event carries (OpenAI's bound for top_logprobs).
let maxTopLogprobs: Int32 = 20

/// LEAP options from the C struct: negative values mean "model default".
func generationOptions(_ p: UnsafePointer<leap_generation_options>?) throws -> GenerationOptions {
    var defaults = leap_generation_options()
    leap_generation_options_init(&defaults, MemoryLayout<leap_generation_options>.size)
    let c = try readParams(p, defaults: defaults, "options")
    for (name, v) in [("temperature", c.temperature), ("top_p", c.top_p), ("min_p", c.min_p),
                      ("repetition_penalty", c.repetition_penalty)] where !v.isFinite {
        throw LeapError.invalidArgument("options->\(name) is \(v); it must be a finite number (negative = the model's default)")
    }
    for (name, v) in [("frequency_penalty", c.frequency_penalty), ("presence_penalty", c.presence_penalty)] where !v.isFinite {
        throw LeapError.invalidArgument("options->\(name) is \(v); it must be a finite number (0 = off)")
    }
    guard c.top_logprobs >= -1 && c.top_logprobs <= maxTopLogprobs else {
        throw LeapError.invalidArgument("options->top_logprobs is \(c.top_logprobs); it must be -1 (off) or 0...\(maxTopLogprobs)")
    }
    var o = GenerationOptions()
    o.temperature = c.temperature < 0 ? nil : c.temperature
    o.topP = c.top_p < 0 ? nil : c.top_p
    o.minP = c.min_p < 0 ? nil : c.min_p
    o.topK = c.top_k < 0 ? nil : Int(c.top_k)
    o.repetitionPenalty = c.repetition_penalty < 0 ? nil : c.repetition_penalty
    o.frequencyPenalty = c.frequency_penalty == 0 ? nil : c.frequency_penalty
    o.presencePenalty = c.presence_penalty == 0 ? nil : c.presence_penalty
    o.topLogprobs = c.top_logprobs < 0 ? nil : Int(c.top_logprobs)
    o.unparsedFunctionCallsAsText = c.unparsed_function_calls_as_text != 0
    o.rngSeed = c.use_rng_seed != 0 ? c.rng_seed : nil
    o.maxTokens = c.max_tokens > 0 ? Int(c.max_tokens) : nil
    if let schema = c.json_schema_constraint {
        let text = try utf8String(schema, "options->json_schema_constraint")
        do { _ = try JSONParser.parse(text) } catch let e as LeapError {
            throw LeapError.invalidArgument("options->json_schema_constraint: \(e.message)")
        }
        o.jsonSchemaConstraint = text
    }
    o.injectSchemaIntoPrompt = c.inject_schema_into_prompt != 0
    switch c.function_call_parser {
    case 0: o.functionCallParser = nil
    case 1: o.functionCallParser = .lfm
    case 2: o.functionCallParser = .hermes
    default:
        throw LeapError.invalidArgument("options->function_call_parser: \(c.function_call_parser) is not a leap_function_call_parser")
    }
    o.inlineThinkingTags = c.inline_thinking_tags != 0
    o.enableThinking = c.enable_thinking != 0
    guard c.audio_temperature.isFinite else {
        throw LeapError.invalidArgument("options->audio_temperature is \(c.audio_temperature); it must be a finite number (negative = the runner's default)")
    }
    o.audioTemperature = c.audio_temperature < 0 ? nil : c.audio_temperature
    o.audioTopK = c.audio_top_k < 0 ? nil : Int(c.audio_top_k)
    switch c.audio_mode {
    case 0: o.audioMode = nil
    case 1: o.audioMode = .textOnly
    case 2: o.audioMode = .sequential
    case 3: o.audioMode = .interleaved
    default: throw LeapError.invalidArgument("options->audio_mode: \(c.audio_mode) is not a leap_audio_mode")
    }
    switch c.drafter {
    case 0: o.drafter = nil
    case 1: o.drafter = DrafterChoice.none
    case 2: o.drafter = .ngram
    case 3: o.drafter = .draftModel
    default: throw LeapError.invalidArgument("options->drafter: \(c.drafter) is not a leap_drafter")
    }
    guard c.max_draft_tokens <= Int32(GenerationOptions.draftTokensLimit) else {
        throw LeapError.invalidArgument("options->max_draft_tokens is \(c.max_draft_tokens); at most \(GenerationOptions.draftTokensLimit) (<= 0: the default)")
    }
    o.maxDraftTokens = c.max_draft_tokens > 0 ? Int(c.max_draft_tokens) : nil
    return o
}

@c @implementation
public func leap_generation_options_init(_ p: UnsafeMutablePointer<leap_generation_options>?, _ size: Int) {
    var d = leap_generation_options()
    d.temperature = -1
    d.top_p = -1
    d.min_p = -1
    d.top_k = -1
    d.repetition_penalty = -1
    d.use_rng_seed = 0
    d.rng_seed = 0
    d.max_tokens = 0
    d.json_schema_constraint = nil
    d.inject_schema_into_prompt = 1
    d.function_call_parser = 1  // LEAP_FUNCTION_CALL_PARSER_LFM
    d.inline_thinking_tags = 0
    d.enable_thinking = 0
    d.audio_temperature = -1
    d.audio_top_k = -1
    d.audio_mode = 0
    d.frequency_penalty = 0
    d.presence_penalty = 0
    d.top_logprobs = -1
    d.unparsed_function_calls_as_text = 0
    d.drafter = 0
    d.max_draft_tokens = 0
    initParams(d, into: p, size: size)
}

@c @implementation
public func leap_generation_callbacks_init(_ p: UnsafeMutablePointer<leap_generation_callbacks>?, _ size: Int) {
    initParams(leap_generation_callbacks(), into: p, size: size)
}

@c @implementation
public func leap_conversation_create(_ m: OpaquePointer?, _ systemPrompt: UnsafePointer<CChar>?,
                                     _ out: UnsafeMutablePointer<OpaquePointer?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_conversation")
        out.pointee = nil
        let model = try borrowModel(m)
        let prompt = systemPrompt == nil ? nil : try utf8String(systemPrompt, "system_prompt")
        out.pointee = Handle.retain(ConversationBox(model.runner.createConversation(systemPrompt: prompt), model: model))
    }
}

@c @implementation
public func leap_conversation_create_from_history(_ m: OpaquePointer?, _ historyJSON: UnsafePointer<CChar>?,
                                                  _ out: UnsafeMutablePointer<OpaquePointer?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_conversation")
        out.pointee = nil
        let model = try borrowModel(m)
        let history = try ChatHistoryJSON.decode(try utf8String(historyJSON, "history_json"))
        out.pointee = Handle.retain(ConversationBox(try model.runner.createConversation(history: history), model: model))
    }
}

@c @implementation
public func leap_conversation_free(_ c: OpaquePointer?) {
    Handle.release(c, kind: .conversation)
}

@c @implementation
public func leap_conversation_history_json(_ c: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_json")
        out.pointee = nil
        out.pointee = try ownedCString(try borrowConversation(c).conversation.exportJSON())
    }
}

@c @implementation
public func leap_conversation_message_count(_ c: OpaquePointer?, _ out: UnsafeMutablePointer<Int>?) -> leap_status {
    ffi {
        let out = try required(out, "out_count")
        out.pointee = try borrowConversation(c).conversation.history.count
    }
}

@c @implementation
public func leap_conversation_message(_ c: OpaquePointer?, _ index: Int, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_message")
        out.pointee = nil
        let history = try borrowConversation(c).conversation.history
        guard index >= 0, index < history.count else {
            throw LeapError.invalidArgument("message index \(index) is out of range (the history has \(history.count) messages)")
        }
        out.pointee = Handle.retain(MessageBox(history[index]))
    }
}

@c @implementation
public func leap_conversation_append(_ c: OpaquePointer?, _ m: OpaquePointer?) -> leap_status {
    ffi {
        let conv = try borrowConversation(c)
        try conv.conversation.append(try borrowMessage(m).message)
    }
}

@c @implementation
public func leap_conversation_remove_last(_ c: OpaquePointer?) -> leap_status {
    ffi { try borrowConversation(c).conversation.removeLastMessage() }
}

@c @implementation
public func leap_conversation_save_state(_ c: OpaquePointer?, _ path: UnsafePointer<CChar>?) -> leap_status {
    ffi {
        let conv = try borrowConversation(c)
        try conv.conversation.saveState(to: try utf8String(path, "path"))
    }
}

@c @implementation
public func leap_conversation_load_state(_ c: OpaquePointer?, _ path: UnsafePointer<CChar>?) -> leap_status {
    ffi {
        let conv = try borrowConversation(c)
        try conv.conversation.loadState(from: try utf8String(path, "path"))
    }
}

@c @implementation
public func leap_conversation_register_function(_ c: OpaquePointer?, _ json: UnsafePointer<CChar>?) -> leap_status {
    ffi {
        let conv = try borrowConversation(c)
        let text = try utf8String(json, "function_json")
        try conv.conversation.registerFunction(try LeapFunction.fromToolJSON(text))
    }
}

@c @implementation
public func leap_conversation_is_generating(_ c: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> leap_status {
    ffi {
        let out = try required(out, "out_flag")
        out.pointee = try borrowConversation(c).conversation.isGenerating ? 1 : 0
    }
}

@c @implementation
public func leap_conversation_stop(_ c: OpaquePointer?) -> leap_status {
    ffi { try borrowConversation(c).conversation.stop() }
}

@c @implementation
public func leap_conversation_generate_begin(_ c: OpaquePointer?, _ m: OpaquePointer?,
                                             _ options: UnsafePointer<leap_generation_options>?,
                                             _ out: UnsafeMutablePointer<OpaquePointer?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_generation")
        out.pointee = nil
        let conv = try borrowConversation(c)
        let message = try borrowMessage(m).message
        let opts = try generationOptions(options)
        let generation = try conv.conversation.generate(message, options: opts)
        out.pointee = Handle.retain(GenerationBox(generation, owner: conv))
    }
}

@c @implementation
public func leap_generation_next(_ g: OpaquePointer?, _ out: UnsafeMutablePointer<leap_event>?) -> leap_status {
    ffi {
        let box = try Handle.borrow(g, GenerationBox.self, kind: .stream, "generation")
        let out = try required(out, "out_event")
        let given = Int(out.pointee.struct_size)
        guard given >= MemoryLayout<UInt32>.size * 2 else {
            throw LeapError.invalidArgument("out_event->struct_size is \(given); set it to sizeof(leap_event)")
        }
        box.clearEvent()
        var e = leap_event()
        e.struct_size = UInt32(min(given, MemoryLayout<leap_event>.size))
        e.kind = Int32(LEAP_EVENT_NONE.rawValue)
        defer { writeParams(e, to: out, size: given) }
        guard !box.finished, let event = try box.generation.next() else {
            box.finished = true
            return
        }
        switch event {
        case .chunk(let t), .reasoningChunk(let t):
            if case .chunk = event { e.kind = Int32(LEAP_EVENT_CHUNK.rawValue) } else { e.kind = Int32(LEAP_EVENT_REASONING_CHUNK.rawValue) }
            box.text = try ownedCString(t)
            e.text = UnsafePointer(box.text)
            e.text_len = t.utf8.count
        case .token(let t):
            e.kind = Int32(LEAP_EVENT_TOKEN.rawValue)
            let c = CSampledToken(t)
            box.token = c
            e.token = c.token
            e.top_logprobs = UnsafePointer(c.top)
            e.n_top_logprobs = c.topCount
        case .functionCalls(let calls):
            e.kind = Int32(LEAP_EVENT_FUNCTION_CALLS.rawValue)
            box.callsJSON = try ownedCString(functionCallsJSON(calls))
            e.function_calls_json = UnsafePointer(box.callsJSON)
        case .audioSample(let samples, let rate):
            e.kind = Int32(LEAP_EVENT_AUDIO_SAMPLE.rawValue)
            let p = UnsafeMutablePointer<Float>.allocate(capacity: max(1, samples.count))
            samples.withUnsafeBufferPointer { if let b = $0.baseAddress { p.initialize(from: b, count: samples.count) } }
            box.samplesPointer = p
            e.samples = UnsafePointer(p)
            e.n_samples = samples.count
            e.sample_rate = Int32(clamping: rate)
        case .complete(let message, let reason, let stats):
            e.kind = Int32(LEAP_EVENT_COMPLETE.rawValue)
            let mbox = MessageBox(message)
            box.message = mbox
            e.message = Handle.unretained(mbox)
            e.finish_reason = reason.rawValue
            box.statsPointer.pointee = cStats(stats)
            e.stats = UnsafePointer(box.statsPointer)
        }
    }
}

@c @implementation
public func leap_generation_free(_ g: OpaquePointer?) {
    Handle.release(g, kind: .stream)
}

@c @implementation
public func leap_conversation_generate(_ c: OpaquePointer?, _ m: OpaquePointer?,
                                       _ options: UnsafePointer<leap_generation_options>?,
                                       _ callbacks: UnsafePointer<leap_generation_callbacks>?) -> leap_status {
    var cb = leap_generation_callbacks()
    var onError: leap_error_callback? = nil
    let status = ffi {
        var d = leap_generation_callbacks()
        leap_generation_callbacks_init(&d, MemoryLayout<leap_generation_callbacks>.size)
        cb = try readParams(callbacks, defaults: d, "callbacks")
        onError = cb.on_error
        // Hold the Conversation itself, not the handle: a callback may free the handle (the generation then
        // runs to its end on this reference) or start/stop generations on it (busy / allowed).
        let conversation = try borrowConversation(c).conversation
        let message = try borrowMessage(m).message
        let opts = try generationOptions(options)
        let generation = try conversation.generate(message, options: opts)
        defer { generation.close() }
        let ud = cb.user_data
        let audioOut = audioSink(cb.on_audio_sample, ud)
        var stopRequested = false
        while let event = try generation.next() {
            var rc: Int32 = 0
            switch event {
            case .chunk(let t):
                if let f = cb.on_chunk { rc = t.withCString { f($0, t.utf8.count, ud) } }
            case .reasoningChunk(let t):
                if let f = cb.on_reasoning_chunk { rc = t.withCString { f($0, t.utf8.count, ud) } }
            case .token(let t):
                if let f = cb.on_token {
                    let c = CSampledToken(t)
                    rc = withExtendedLifetime(c) { withUnsafePointer(to: c.token) { f($0, c.top, c.topCount, ud) } }
                }
            case .functionCalls(let calls):
                if let f = cb.on_function_calls { rc = functionCallsJSON(calls).withCString { f($0, ud) } }
            case .audioSample(let samples, let rate):
                if let audioOut, !audioOut(AudioChunk(samples: samples, sampleRate: rate)) { rc = 1 }
            case .complete(let message, let reason, let stats):
                if let f = cb.on_complete {
                    let mbox = MessageBox(message)
                    var s = cStats(stats)
                    withExtendedLifetime(mbox) {
                        f(Handle.unretained(mbox), leap_finish_reason(rawValue: UInt32(bitPattern: reason.rawValue)), &s, ud)
                    }
                }
            }
            if rc != 0 && !stopRequested {
                stopRequested = true
                conversation.stop()
            }
        }
    }
    if status != LEAP_OK, let onError {
        // Copy the message: the callback may call into the library and replace it.
        let text = String(cString: LastError.current)
        let copy = strdup(text)
        onError(status, copy, cb.user_data)
        free(copy)
        LastError.set(text)
    }
    return status
}
