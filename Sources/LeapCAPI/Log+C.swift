import CLeap
import LeapCore

// The process-wide log callback.

/// A C callback and its user_data, called from any thread (the C contract makes them thread-safe).
private struct CLogCallback: @unchecked Sendable {
    let callback: leap_log_callback
    let userData: UnsafeMutableRawPointer?

    func callAsFunction(_ level: LogLevel, _ message: String) {
        message.withCString { callback(cLogLevel(level), $0, userData) }
    }
}

private func cLogLevel(_ level: LogLevel) -> leap_log_level {
    switch level {
    case .error: return LEAP_LOG_ERROR
    case .warning: return LEAP_LOG_WARNING
    case .info: return LEAP_LOG_INFO
    case .debug: return LEAP_LOG_DEBUG
    }
}

@c @implementation
public func leap_set_log_callback(_ callback: leap_log_callback?, _ maxLevel: leap_log_level,
                                  _ userData: UnsafeMutableRawPointer?) -> leap_status {
    ffi {
        let level: LogLevel
        switch maxLevel {
        case LEAP_LOG_ERROR: level = .error
        case LEAP_LOG_WARNING: level = .warning
        case LEAP_LOG_INFO: level = .info
        case LEAP_LOG_DEBUG: level = .debug
        default:
            throw LeapError.invalidArgument(
                "max_level is \(maxLevel.rawValue); expected LEAP_LOG_ERROR (1) to LEAP_LOG_DEBUG (4)")
        }
        guard let callback else {
            Log.setSink(nil)
            return
        }
        let sink = CLogCallback(callback: callback, userData: userData)
        Log.setSink({ level, message in sink(level, message) }, maxLevel: level)
    }
}
