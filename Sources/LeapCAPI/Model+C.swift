import CLeap
import Glibc
import LeapCore
import LeapJSON
import LeapMessages
import LeapPromptCache
import LeapRuntime

// leap_model_*: a loaded model (weights + tokenizer + chat template) shared by conversations.

final class ModelBox: HandleBox {
    let runner: ModelRunner
    init(_ runner: ModelRunner) {
        self.runner = runner
        super.init(kind: .model)
    }
}

/// A `leap_model` handle (owned by the caller: release with `leap_model_free`) over a runner built in Swift,
/// e.g. with another backend. Not part of the C API; Swift code embedding the library (and its tests, which
/// drive the C entry points over scripted backends) uses it.
package func retainedModelHandle(_ runner: ModelRunner) -> OpaquePointer {
    Handle.retain(ModelBox(runner))
}

func borrowModel(_ p: OpaquePointer?) throws -> ModelBox {
    try Handle.borrow(p, ModelBox.self, kind: .model, "model")
}

func optionalUTF8(_ p: UnsafePointer<CChar>?, _ name: StaticString) throws -> String? {
    p == nil ? nil : try utf8String(p, name)
}

@c @implementation
public func leap_model_params_init(_ p: UnsafeMutablePointer<leap_model_params>?, _ size: Int) {
    var d = leap_model_params()
    d.n_threads = 0
    d.context_size = 0
    d.auto_detect_companion_files = 1
    let cache = PromptCacheOptions()
    d.cache_enabled = 0
    d.cache_max_entries_disk = Int32(cache.maxEntriesDisk)
    d.cache_max_entries_memory = Int32(cache.maxEntriesMemory)
    d.cache_max_bytes_memory = Int64(cache.maxBytesMemory)
    d.cache_max_bytes_disk = Int64(cache.maxBytesDisk)
    d.cache_disk_disabled = 0
    d.draft_model_path = nil
    initParams(d, into: p, size: size)
}

/// The prompt-cache fields leap_model_params (cache_*) and leap_bundle_params (prompt_cache_*) share; the
/// options are left off when `enabled` is 0.
func promptCacheOptions(enabled: Int32, path: UnsafePointer<CChar>?, maxEntriesDisk: Int32, maxEntriesMemory: Int32,
                        maxBytesMemory: Int64, maxBytesDisk: Int64, diskDisabled: Int32,
                        pathField: StaticString) throws -> PromptCacheOptions {
    var o = PromptCacheOptions()
    guard enabled != 0 else { return o }
    o.enabled = true
    o.path = try optionalUTF8(path, pathField)
    o.maxEntriesDisk = Int(maxEntriesDisk)
    o.maxEntriesMemory = Int(maxEntriesMemory)
    o.maxBytesMemory = Int(clamping: maxBytesMemory)
    o.maxBytesDisk = Int(clamping: maxBytesDisk)
    o.diskDisabled = diskDisabled != 0
    return o
}

/// The fields leap_model_params and leap_bundle_params share, checked (0 = the default).
func runnerOptions(threads: Int32, contextSize: Int32, chatTemplate: UnsafePointer<CChar>?) throws -> RunnerOptions {
    guard threads >= 0, threads <= 1024 else { throw LeapError.invalidArgument("params->n_threads must be in 0...1024, got \(threads)") }
    guard contextSize >= 0 else { throw LeapError.invalidArgument("params->context_size must not be negative, got \(contextSize)") }
    var o = RunnerOptions()
    o.threads = threads > 0 ? Int(threads) : nil
    o.contextSize = contextSize > 0 ? Int(contextSize) : nil
    o.chatTemplate = try optionalUTF8(chatTemplate, "params->chat_template")
    return o
}

@c @implementation
public func leap_model_load(_ path: UnsafePointer<CChar>?, _ params: UnsafePointer<leap_model_params>?,
                            _ out: UnsafeMutablePointer<OpaquePointer?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_model")
        out.pointee = nil
        let file = try utf8String(path, "gguf_path")
        var d = leap_model_params()
        leap_model_params_init(&d, MemoryLayout<leap_model_params>.size)
        let c = try readParams(params, defaults: d, "params")
        var o = try runnerOptions(threads: c.n_threads, contextSize: c.context_size, chatTemplate: c.chat_template)
        o.mmprojPath = try optionalUTF8(c.mmproj_path, "params->mmproj_path")
        o.audioDecoderPath = try optionalUTF8(c.audio_decoder_path, "params->audio_decoder_path")
        o.audioTokenizerPath = try optionalUTF8(c.audio_tokenizer_path, "params->audio_tokenizer_path")
        o.autoDetectCompanionFiles = c.auto_detect_companion_files != 0
        o.draftModelPath = try optionalUTF8(c.draft_model_path, "params->draft_model_path")
        o.cache = try promptCacheOptions(enabled: c.cache_enabled, path: c.cache_path,
                                         maxEntriesDisk: c.cache_max_entries_disk,
                                         maxEntriesMemory: c.cache_max_entries_memory,
                                         maxBytesMemory: c.cache_max_bytes_memory,
                                         maxBytesDisk: c.cache_max_bytes_disk, diskDisabled: c.cache_disk_disabled,
                                         pathField: "params->cache_path")
        out.pointee = Handle.retain(ModelBox(try ModelRunner.load(path: file, options: o)))
    }
}

@c @implementation
public func leap_model_companion_path(_ m: OpaquePointer?, _ kind: leap_companion_kind,
                                      _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_path")
        out.pointee = nil
        let runner = try borrowModel(m).runner
        if let path = runner.companions[try companionKind(kind)] { out.pointee = try ownedCString(path) }
    }
}

/// The runtime's companion kind of a C `leap_companion_kind`, refusing a value outside the enum.
private func companionKind(_ kind: leap_companion_kind) throws -> CompanionKind {
    switch kind {
    case LEAP_COMPANION_MMPROJ: return .mmproj
    case LEAP_COMPANION_AUDIO_DECODER: return .audioDecoder
    case LEAP_COMPANION_AUDIO_TOKENIZER: return .audioTokenizer
    default: throw LeapError.invalidArgument("kind \(kind.rawValue) is not a leap_companion_kind")
    }
}

@c @implementation
public func leap_model_free(_ m: OpaquePointer?) {
    Handle.release(m, kind: .model)
}

@c @implementation
public func leap_model_cache_flush(_ m: OpaquePointer?) -> leap_status {
    ffi { try borrowModel(m).runner.promptCache?.flush() }
}

@c @implementation
public func leap_model_id(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_id")
        out.pointee = nil
        out.pointee = try ownedCString(try borrowModel(m).runner.modelId)
    }
}

@c @implementation
public func leap_model_architecture(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_arch")
        out.pointee = nil
        out.pointee = try ownedCString(try borrowModel(m).runner.model.architecture)
    }
}

@c @implementation
public func leap_model_chat_template(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_source")
        out.pointee = nil
        out.pointee = try ownedCString(try borrowModel(m).runner.templateSource)
    }
}

@c @implementation
public func leap_model_uses_fallback_template(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> leap_status {
    ffi {
        let out = try required(out, "out_flag")
        out.pointee = try borrowModel(m).runner.templateIsFallback ? 1 : 0
    }
}

@c @implementation
public func leap_model_context_size(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> leap_status {
    ffi {
        let out = try required(out, "out_tokens")
        out.pointee = Int32(clamping: try borrowModel(m).runner.contextSize)
    }
}

@c @implementation
public func leap_model_vocab_size(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> leap_status {
    ffi {
        let out = try required(out, "out_size")
        out.pointee = Int32(clamping: try borrowModel(m).runner.model.vocabularySize)
    }
}

@c @implementation
public func leap_model_prompt_token_count(_ m: OpaquePointer?, _ json: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<Int>?) -> leap_status {
    ffi {
        let out = try required(out, "out_tokens")
        let runner = try borrowModel(m).runner
        let messages = try ChatHistoryJSON.decode(try utf8String(json, "messages_json"))
        out.pointee = try runner.promptTokenCount(messages: messages)
    }
}

@c @implementation
public func leap_model_tokenizer(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_tokenizer")
        out.pointee = nil
        guard let t = try borrowModel(m).runner.textTokenizer else {
            throw LeapError.unsupported("this model has no GGUF tokenizer")
        }
        out.pointee = Handle.retain(TokenizerBox(t))
    }
}

@c @implementation
public func leap_model_apply_chat_template(_ m: OpaquePointer?, _ messagesJSON: UnsafePointer<CChar>?,
                                           _ toolsJSON: UnsafePointer<CChar>?, _ addGenerationPrompt: Int32,
                                           _ extraJSON: UnsafePointer<CChar>?,
                                           _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_text")
        out.pointee = nil
        let runner = try borrowModel(m).runner
        func array(_ p: UnsafePointer<CChar>?, _ name: StaticString) throws -> [JSONValue]? {
            guard p != nil else { return nil }
            let v = try JSONParser.parse(try utf8String(p, name))
            guard case .array(let items) = v else { throw LeapError.invalidArgument("\(name): expected a JSON array, found \(v.typeName)") }
            return items
        }
        let messages = try array(messagesJSON, "messages_json") ?? []
        guard messagesJSON != nil else { throw LeapError.invalidArgument("messages_json must not be NULL") }
        let tools = try array(toolsJSON, "tools_json")
        var variables = JSONObject()
        variables.set("bos_token", .string(runner.tokenizer.bosText))
        variables.set("eos_token", .string(runner.tokenizer.eosText))
        if extraJSON != nil {
            let v = try JSONParser.parse(try utf8String(extraJSON, "extra_json"))
            guard case .object(let extra) = v else { throw LeapError.invalidArgument("extra_json: expected a JSON object, found \(v.typeName)") }
            for e in extra { variables.set(e.key, e.value) }
        }
        let text = try runner.template.render(messages: messages, tools: tools, addGenerationPrompt: addGenerationPrompt != 0,
                                              variables: variables)
        out.pointee = try ownedCString(text)
    }
}
