import CLeap
import Glibc

// Status names, the last error, version, and the two release functions.

@c @implementation
public func leap_status_string(_ status: leap_status) -> UnsafePointer<CChar>? {
    let name: StaticString
    switch status {
    case LEAP_OK: name = "LEAP_OK"
    case LEAP_ERR_INVALID_ARGUMENT: name = "LEAP_ERR_INVALID_ARGUMENT"
    case LEAP_ERR_IO: name = "LEAP_ERR_IO"
    case LEAP_ERR_FORMAT: name = "LEAP_ERR_FORMAT"
    case LEAP_ERR_UNSUPPORTED: name = "LEAP_ERR_UNSUPPORTED"
    case LEAP_ERR_SERIALIZATION: name = "LEAP_ERR_SERIALIZATION"
    case LEAP_ERR_AUDIO_FORMAT: name = "LEAP_ERR_AUDIO_FORMAT"
    case LEAP_ERR_MODEL_LOADING: name = "LEAP_ERR_MODEL_LOADING"
    case LEAP_ERR_GENERATION: name = "LEAP_ERR_GENERATION"
    case LEAP_ERR_PROMPT_EXCEEDS_CONTEXT: name = "LEAP_ERR_PROMPT_EXCEEDS_CONTEXT"
    case LEAP_ERR_FUNCTION_CALL_PARSING: name = "LEAP_ERR_FUNCTION_CALL_PARSING"
    case LEAP_ERR_CANCELLED: name = "LEAP_ERR_CANCELLED"
    case LEAP_ERR_BUSY: name = "LEAP_ERR_BUSY"
    case LEAP_ERR_OUT_OF_MEMORY: name = "LEAP_ERR_OUT_OF_MEMORY"
    case LEAP_ERR_BUFFER_TOO_SMALL: name = "LEAP_ERR_BUFFER_TOO_SMALL"
    case LEAP_ERR_INTERNAL: name = "LEAP_ERR_INTERNAL"
    default: name = "LEAP_ERR_UNKNOWN"
    }
    return UnsafeRawPointer(name.utf8Start).assumingMemoryBound(to: CChar.self)
}

@c @implementation
public func leap_last_error() -> UnsafePointer<CChar>? {
    LastError.current
}

@c @implementation
public func leap_version_number() -> UInt32 {
    UInt32(LEAP_VERSION_NUMBER)
}

@c @implementation
public func leap_version_string() -> UnsafePointer<CChar>? {
    let s: StaticString = "0.1.0"
    return UnsafeRawPointer(s.utf8Start).assumingMemoryBound(to: CChar.self)
}

@c @implementation
public func leap_string_free(_ s: UnsafeMutablePointer<CChar>?) {
    free(s)
}

@c @implementation
public func leap_buffer_free(_ p: UnsafeMutableRawPointer?) {
    free(p)
}
