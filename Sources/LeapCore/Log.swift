import Glibc
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
///
/// `setSink` returns once the sink it replaces has finished every call running on other threads, so the
/// caller may then free what that sink uses (a C callback's user_data, a Python thunk).
public enum Log {
    /// A sink and how many of its calls are running now.
    private final class Installed: Sendable {
        let sink: LogSink
        let running = Atomic<Int>(0)
        init(_ sink: @escaping LogSink) { self.sink = sink }
    }

    private static let installed = Mutex<Installed?>(nil)
    /// The least severe level that reaches the sink; 0 while there is none.
    private static let threshold = Atomic<Int32>(0)
    /// Sink calls running on the current thread (a sink may log, or set the sink, from inside a call).
    private static let callDepth: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Sends messages of `maxLevel` and more severe to `newSink`; nil silences the log. Waits until the
    /// previous sink's calls on other threads have returned, except when called from inside a sink call
    /// (which cannot wait for itself, nor for calls that may be waiting for it).
    public static func setSink(_ newSink: LogSink?, maxLevel: LogLevel = .warning) {
        let old = installed.withLock { current -> Installed? in
            let old = current
            current = newSink.map(Installed.init)
            return old
        }
        threshold.store(newSink == nil ? 0 : maxLevel.rawValue, ordering: .releasing)
        guard let old, depth() == 0 else { return }
        while old.running.load(ordering: .acquiring) > 0 {
            var pause = timespec(tv_sec: 0, tv_nsec: 200_000)
            nanosleep(&pause, nil)
        }
    }

    public static func enabled(_ level: LogLevel) -> Bool {
        level.rawValue <= threshold.load(ordering: .acquiring)
    }

    public static func emit(_ level: LogLevel, _ message: @autoclosure () -> String) {
        guard enabled(level) else { return }
        // Counted as running under the lock (a setSink after it waits for this call); called outside it, so
        // that a sink may log or set the sink itself.
        guard let current = installed.withLock({ i -> Installed? in
            i?.running.add(1, ordering: .acquiringAndReleasing)
            return i
        }) else { return }
        let d = depth()
        setDepth(d + 1)
        defer {
            setDepth(d)
            current.running.subtract(1, ordering: .acquiringAndReleasing)
        }
        current.sink(level, message())
    }

    private static func depth() -> Int { Int(bitPattern: pthread_getspecific(callDepth)) }
    private static func setDepth(_ d: Int) { pthread_setspecific(callDepth, UnsafeRawPointer(bitPattern: d)) }

    public static func error(_ message: @autoclosure () -> String) { emit(.error, message()) }
    public static func warning(_ message: @autoclosure () -> String) { emit(.warning, message()) }
    public static func info(_ message: @autoclosure () -> String) { emit(.info, message()) }
    public static func debug(_ message: @autoclosure () -> String) { emit(.debug, message()) }
}
