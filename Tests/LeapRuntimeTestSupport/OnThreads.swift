// Running test bodies on threads of their own, all at once (conversations or contexts working concurrently).
import Glibc
import LeapCore

private final class ThreadBody {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}

private final class ResultSlot<T>: @unchecked Sendable {
    var result: Result<T, any Error> = .failure(LeapError(.internal, "not run"))
}

/// Runs `body(i)` for every i in 0..<n, each on its own thread at once, and returns the results in order.
package func onThreads<T>(_ n: Int, _ body: @escaping (Int) throws -> T) -> [Result<T, any Error>] {
    let slots = (0..<n).map { _ in ResultSlot<T>() }
    var threads: [pthread_t] = []
    for i in 0..<n {
        let task = ThreadBody { slots[i].result = Result { try body(i) } }
        var t = pthread_t()
        pthread_create(&t, nil, { arg in
            guard let arg else { return nil }
            Unmanaged<ThreadBody>.fromOpaque(arg).takeRetainedValue().run()
            return nil
        }, Unmanaged.passRetained(task).toOpaque())
        threads.append(t)
    }
    for t in threads { pthread_join(t, nil) }
    return slots.map(\.result)
}
