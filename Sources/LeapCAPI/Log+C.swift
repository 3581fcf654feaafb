import CLeap
import LeapCore

// The process-wide log callback.

/// A C callback and its user_data, called from any thread (the C contract makes them thread-safe).
private struct CLogCallback: @unchecked Sendable {
    let callback: leap_log_callback
    let userData: UnsafeMutableRawPointer?

    func callAsFunction(_ level: LogLevel, _ message: String) {
        message.withCString { callback(leap_log_level(rawValue: UInt32(level.rawValue)), $0, userData) }
    }
}

@c @implementation
public func leap_set_log_callback(_ callback: leap_log_callback?, _ maxLevel: leap_log_level,
                                  _ userData: UnsafeMutableRawPointer?) -> leap_status {
    ffi {
        guard let level = LogLevel(rawValue: Int32(bitPattern: maxLevel.rawValue)) else {
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
