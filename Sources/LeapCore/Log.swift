import Synchronization

/// Severity of a log message; a lower raw value is more severe.
public enum LogLevel: Int32, Sendable, Comparable {
    case error = 1
    case warning = 2
    case info = 3
    case debug = 4

    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }

    public var name: String {
        switch self {
        case .error: return "error"
        case .warning: return "warning"
        case .info: return "info"
        case .debug: return "debug"
        }
    }
}

/// Receives messages from whichever thread produces them, possibly from several at once.
public typealias LogSink = @Sendable (LogLevel, String) -> Void

/// The process-wide log: things a user should hear about that are not the failure of a call (a companion
/// file left out, a cache snapshot ignored, a fallback taken). Silent until a sink is set; a message below
/// the sink's level costs one atomic load and is never formatted.
public enum Log {
    private static let sink = Mutex<LogSink?>(nil)
    /// The least severe level that reaches the sink; 0 while there is none.
    private static let threshold = Atomic<Int32>(0)

    /// Sends messages of `maxLevel` and more severe to `newSink`; nil silences the log.
    public static func setSink(_ newSink: LogSink?, maxLevel: LogLevel = .warning) {
        sink.withLock { $0 = newSink }
        threshold.store(newSink == nil ? 0 : maxLevel.rawValue, ordering: .releasing)
    }

    public static func enabled(_ level: LogLevel) -> Bool {
        level.rawValue <= threshold.load(ordering: .acquiring)
    }

    public static func emit(_ level: LogLevel, _ message: @autoclosure () -> String) {
        guard enabled(level) else { return }
        // Called outside the lock: a sink may log or reset the sink itself.
        guard let current = sink.withLock({ $0 }) else { return }
        current(level, message())
    }

    public static func error(_ message: @autoclosure () -> String) { emit(.error, message()) }
    public static func warning(_ message: @autoclosure () -> String) { emit(.warning, message()) }
    public static func info(_ message: @autoclosure () -> String) { emit(.info, message()) }
    public static func debug(_ message: @autoclosure () -> String) { emit(.debug, message()) }
}
