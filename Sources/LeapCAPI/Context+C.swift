import CLeap
import Glibc
import LeapCore
import LeapModels
import LeapRuntime
import LeapSampling

// leap_context_* / leap_sampler_* / leap_model_tokenize: the low-level evaluation API over LeapModels.

final class ContextBox: HandleBox {
    let model: ModelBox  // keeps the model (and its mmap) alive
    let context: InferenceContext
    init(_ model: ModelBox, _ context: InferenceContext) {
        self.model = model
        self.context = context
        super.init(kind: .context)
    }

    deinit { context.model.batcher.leave(context) }
}

final class SamplerBox: HandleBox {
    let sampler: Sampler
    init(_ s: Sampler) {
        sampler = s
        super.init(kind: .sampler)
    }
}

private func borrowContext(_ p: OpaquePointer?) throws -> ContextBox {
    try Handle.borrow(p, ContextBox.self, kind: .context, "ctx")
}

private func borrowSampler(_ p: OpaquePointer?) throws -> SamplerBox {
    try Handle.borrow(p, SamplerBox.self, kind: .sampler, "sampler")
}

@c @implementation
public func leap_context_params_init(_ p: UnsafeMutablePointer<leap_context_params>?, _ size: Int) {
    initParams(leap_context_params(), into: p, size: size)
}

@c @implementation
public func leap_context_create(_ m: OpaquePointer?, _ params: UnsafePointer<leap_context_params>?,
                                _ out: UnsafeMutablePointer<OpaquePointer?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_ctx")
        out.pointee = nil
        let box = try borrowModel(m)
        guard let lm = box.runner.languageModel else {
            throw LeapError.unsupported("this model has no low-level evaluation engine")
        }
        var d = leap_context_params()
        leap_context_params_init(&d, MemoryLayout<leap_context_params>.size)
        let c = try readParams(params, defaults: d, "params")
        guard c.context_size >= 0 else { throw LeapError.invalidArgument("params->context_size must not be negative, got \(c.context_size)") }
        guard c.n_threads >= 0, c.n_threads <= 1024 else { throw LeapError.invalidArgument("params->n_threads must be in 0...1024, got \(c.n_threads)") }
        var o = ContextOptions(contextSize: c.context_size > 0 ? Int(c.context_size) : box.runner.contextSize)
        o.kvCacheType = c.kv_cache_f32 != 0 ? .f32 : .f16
        o.threads = c.n_threads > 0 ? Int(c.n_threads) : nil
        out.pointee = Handle.retain(ContextBox(box, try lm.makeContext(o)))
    }
}

@c @implementation
public func leap_context_free(_ ctx: OpaquePointer?) {
    Handle.release(ctx, kind: .context)
}

private func evalTokens(_ ctx: OpaquePointer?, _ tokens: UnsafePointer<Int32>?, _ n: Int, all: Bool) throws {
    let box = try borrowContext(ctx)
    guard n > 0 else { throw LeapError.invalidArgument("n_tokens must be > 0") }
    let p = try required(tokens, "tokens")
    // One token joins the model's decode step: the contexts of one model decoding on other threads at the
    // same moment share its forward pass. A prompt runs on its own (between steps) and the step does not
    // wait for this context meanwhile.
    let batcher = box.context.model.batcher
    if n == 1 {
        try batcher.step(box.context, token: p[0])
    } else {
        batcher.leave(box.context)
        try box.context.eval(tokens: UnsafeBufferPointer(start: p, count: n), wantAllLogits: all)
    }
}

@c @implementation
public func leap_context_eval(_ ctx: OpaquePointer?, _ tokens: UnsafePointer<Int32>?, _ n: Int) -> leap_status {
    ffi { try evalTokens(ctx, tokens, n, all: false) }
}

@c @implementation
public func leap_context_eval_all_logits(_ ctx: OpaquePointer?, _ tokens: UnsafePointer<Int32>?, _ n: Int) -> leap_status {
    ffi { try evalTokens(ctx, tokens, n, all: true) }
}

@c @implementation
public func leap_context_eval_verify(_ ctx: OpaquePointer?, _ tokens: UnsafePointer<Int32>?, _ n: Int) -> leap_status {
    ffi {
        let box = try borrowContext(ctx)
        let limit = InferenceContext.maxVerifiedTokens
        guard n > 0, n <= limit else { throw LeapError.invalidArgument("n_tokens must be in 1...\(limit) (one verification pass), got \(n)") }
        let p = try required(tokens, "tokens")
        try box.context.model.batcher.step(box.context, tokens: Array(UnsafeBufferPointer(start: p, count: n)))
    }
}

@c @implementation
public func leap_context_logits(_ ctx: OpaquePointer?, _ index: Int32, _ out: UnsafeMutablePointer<UnsafePointer<Float>?>?,
                                _ outN: UnsafeMutablePointer<Int>?) -> leap_status {
    ffi {
        let out = try required(out, "out_logits")
        let outN = try required(outN, "out_n_vocab")
        out.pointee = nil
        outN.pointee = 0
        let row = try borrowContext(ctx).context.logits(at: Int(index))
        out.pointee = row.baseAddress
        outN.pointee = row.count
    }
}

@c @implementation
public func leap_context_rewind(_ ctx: OpaquePointer?, _ nKeep: Int32) -> leap_status {
    ffi { try borrowContext(ctx).context.rewind(to: Int(nKeep)) }
}

@c @implementation
public func leap_context_n_past(_ ctx: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> leap_status {
    ffi {
        let out = try required(out, "out_n_past")
        out.pointee = Int32(clamping: try borrowContext(ctx).context.nPast)
    }
}

@c @implementation
public func leap_context_size(_ ctx: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> leap_status {
    ffi {
        let out = try required(out, "out_positions")
        out.pointee = Int32(clamping: try borrowContext(ctx).context.contextSize)
    }
}

@c @implementation
public func leap_model_tokenize(_ m: OpaquePointer?, _ text: UnsafePointer<CChar>?, _ addSpecial: Int32, _ parseSpecial: Int32,
                               _ out: UnsafeMutablePointer<UnsafeMutablePointer<Int32>?>?, _ outN: UnsafeMutablePointer<Int>?) -> leap_status {
    ffi {
        let out = try required(out, "out_tokens")
        let outN = try required(outN, "out_n")
        out.pointee = nil
        outN.pointee = 0
        let s = try utf8String(text, "text")
        guard s.utf8.count <= PromptBuilder.maxPromptBytes else {  // 32-bit positions in the tokenizer
            throw LeapError.invalidArgument("text of \(s.utf8.count) bytes is too long to tokenize (at most \(PromptBuilder.maxPromptBytes))")
        }
        let toks = try borrowModel(m).runner.tokenizer.tokenize(s, addSpecial: addSpecial != 0, parseSpecial: parseSpecial != 0)
        if !toks.isEmpty { out.pointee = try ownedBuffer(toks) }
        outN.pointee = toks.count
    }
}

@c @implementation
public func leap_model_token_piece(_ m: OpaquePointer?, _ token: Int32, _ out: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
                                   _ outN: UnsafeMutablePointer<Int>?) -> leap_status {
    ffi {
        let out = try required(out, "out_bytes")
        let outN = try required(outN, "out_n")
        out.pointee = nil
        outN.pointee = 0
        let tok = try borrowModel(m).runner.tokenizer
        guard token >= 0, Int(token) < tok.vocabularySize else {
            throw LeapError.invalidArgument("token \(token) is out of range 0..<\(tok.vocabularySize)")
        }
        let bytes = tok.piece(token)
        if !bytes.isEmpty { out.pointee = try ownedBuffer(bytes) }
        outN.pointee = bytes.count
    }
}

@c @implementation
public func leap_model_token_is_eog(_ m: OpaquePointer?, _ token: Int32, _ out: UnsafeMutablePointer<Int32>?) -> leap_status {
    ffi {
        let out = try required(out, "out_flag")
        let tok = try borrowModel(m).runner.tokenizer
        guard token >= 0, Int(token) < tok.vocabularySize else {
            throw LeapError.invalidArgument("token \(token) is out of range 0..<\(tok.vocabularySize)")
        }
        out.pointee = tok.isEndOfGeneration(token) ? 1 : 0
    }
}

@c @implementation
public func leap_sampler_params_init(_ p: UnsafeMutablePointer<leap_sampler_params>?, _ size: Int) {
    let s = SamplerParams()
    var d = leap_sampler_params()
    d.temperature = s.temperature
    d.top_k = Int32(s.topK)
    d.top_p = s.topP
    d.min_p = s.minP
    d.repetition_penalty = s.repetitionPenalty
    d.frequency_penalty = s.frequencyPenalty
    d.presence_penalty = s.presencePenalty
    d.penalty_last_n = Int32(s.penaltyLastN)
    d.seed = s.seed
    initParams(d, into: p, size: size)
}

@c @implementation
public func leap_sampler_create(_ params: UnsafePointer<leap_sampler_params>?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_sampler")
        out.pointee = nil
        var d = leap_sampler_params()
        leap_sampler_params_init(&d, MemoryLayout<leap_sampler_params>.size)
        let c = try readParams(params, defaults: d, "params")
        for (name, v) in [("temperature", c.temperature), ("top_p", c.top_p), ("min_p", c.min_p),
                          ("repetition_penalty", c.repetition_penalty), ("frequency_penalty", c.frequency_penalty),
                          ("presence_penalty", c.presence_penalty)] where !v.isFinite {
            throw LeapError.invalidArgument("params->\(name) must be finite, got \(v)")
        }
        guard c.repetition_penalty > 0 else { throw LeapError.invalidArgument("params->repetition_penalty must be > 0, got \(c.repetition_penalty)") }
        guard c.penalty_last_n >= -1 else { throw LeapError.invalidArgument("params->penalty_last_n must be >= -1, got \(c.penalty_last_n)") }
        var s = SamplerParams()
        s.temperature = c.temperature
        s.topK = Int(c.top_k)
        s.topP = c.top_p
        s.minP = c.min_p
        s.repetitionPenalty = c.repetition_penalty
        s.frequencyPenalty = c.frequency_penalty
        s.presencePenalty = c.presence_penalty
        s.penaltyLastN = Int(c.penalty_last_n)
        s.seed = c.seed
        out.pointee = Handle.retain(SamplerBox(Sampler(params: s)))
    }
}

@c @implementation
public func leap_sampler_free(_ s: OpaquePointer?) {
    Handle.release(s, kind: .sampler)
}

@c @implementation
public func leap_sampler_sample(_ s: OpaquePointer?, _ logits: UnsafePointer<Float>?, _ n: Int, _ out: UnsafeMutablePointer<Int32>?) -> leap_status {
    ffi {
        let out = try required(out, "out_token")
        let box = try borrowSampler(s)
        guard n > 0, n <= Int(Int32.max) else { throw LeapError.invalidArgument("n_vocab must be in 1...\(Int32.max), got \(n)") }
        let p = try required(logits, "logits")
        out.pointee = box.sampler.sample(logits: UnsafeBufferPointer(start: p, count: n))
    }
}

@c @implementation
public func leap_sampler_accept(_ s: OpaquePointer?, _ token: Int32) -> leap_status {
    ffi { try borrowSampler(s).sampler.accept(token) }
}

@c @implementation
public func leap_sampler_reset(_ s: OpaquePointer?) -> leap_status {
    ffi { try borrowSampler(s).sampler.reset() }
}
