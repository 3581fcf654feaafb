import CLeap
import Glibc
import LeapCore
import LeapDownload
import LeapPromptCache
import LeapRuntime

// leap_model_load_bundle and its cancel tokens: LEAP bundle manifests, their downloads, the model loaded
// from them.

final class CancelTokenBox: HandleBox {
    let cancellation = DownloadCancellation()
    init() { super.init(kind: .cancelToken) }
}

func borrowCancelToken(_ p: OpaquePointer?) throws -> CancelTokenBox {
    try Handle.borrow(p, CancelTokenBox.self, kind: .cancelToken, "token")
}

@c @implementation
public func leap_cancel_token_create(_ out: UnsafeMutablePointer<OpaquePointer?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_token")
        out.pointee = Handle.retain(CancelTokenBox())
    }
}

@c @implementation
public func leap_cancel_token_cancel(_ token: OpaquePointer?) -> leap_status {
    ffi { try borrowCancelToken(token).cancellation.cancel() }
}

@c @implementation
public func leap_cancel_token_is_cancelled(_ token: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> leap_status {
    ffi {
        let out = try required(out, "out_flag")
        out.pointee = try borrowCancelToken(token).cancellation.isCancelled ? 1 : 0
    }
}

@c @implementation
public func leap_cancel_token_free(_ token: OpaquePointer?) {
    Handle.release(token, kind: .cancelToken)
}

@c @implementation
public func leap_bundle_params_init(_ p: UnsafeMutablePointer<leap_bundle_params>?, _ size: Int) {
    var d = leap_bundle_params()
    let cache = PromptCacheOptions()
    d.prompt_cache_max_entries_disk = Int32(cache.maxEntriesDisk)
    d.prompt_cache_max_entries_memory = Int32(cache.maxEntriesMemory)
    d.prompt_cache_max_bytes_memory = Int64(cache.maxBytesMemory)
    d.prompt_cache_max_bytes_disk = Int64(cache.maxBytesDisk)
    initParams(d, into: p, size: size)
}

@c @implementation
public func leap_model_load_bundle(_ source: UnsafePointer<CChar>?, _ params: UnsafePointer<leap_bundle_params>?,
                                   _ out: UnsafeMutablePointer<OpaquePointer?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_model")
        out.pointee = nil
        let location = try utf8String(source, "path_or_url")
        var d = leap_bundle_params()
        leap_bundle_params_init(&d, MemoryLayout<leap_bundle_params>.size)
        let c = try readParams(params, defaults: d, "params")
        guard c.stall_timeout_seconds >= 0 else {
            throw LeapError.invalidArgument("params->stall_timeout_seconds must not be negative, got \(c.stall_timeout_seconds)")
        }
        var o = BundleLoadOptions()
        o.runner = try runnerOptions(threads: c.n_threads, contextSize: c.context_size, chatTemplate: c.chat_template)
        o.runner.cache = try promptCacheOptions(enabled: c.prompt_cache_enabled, path: c.prompt_cache_path,
                                                maxEntriesDisk: c.prompt_cache_max_entries_disk,
                                                maxEntriesMemory: c.prompt_cache_max_entries_memory,
                                                maxBytesMemory: c.prompt_cache_max_bytes_memory,
                                                maxBytesDisk: c.prompt_cache_max_bytes_disk,
                                                diskDisabled: c.prompt_cache_disk_disabled,
                                                pathField: "params->prompt_cache_path")
        o.cacheDirectory = try optionalUTF8(c.cache_dir, "params->cache_dir")
        if c.stall_timeout_seconds > 0 { o.download.stallTimeout = Int(c.stall_timeout_seconds) }
        // The callback's non-zero return cancels this call only; the caller's token cancels it too.
        let cancel = DownloadCancellation(parent: try c.cancel.map { try borrowCancelToken($0).cancellation })
        o.cancel = cancel
        if let callback = c.on_progress {
            let userData = c.user_data
            o.progress = { file, done, total in
                let stop = file.withCString { callback($0, UInt64(max(0, done)), UInt64(max(0, total ?? 0)), userData) }
                if stop != 0 { cancel.cancel() }
            }
        }
        out.pointee = Handle.retain(ModelBox(try ModelRunner.load(bundle: location, options: o)))
    }
}
