// DecodeBatcher: steps the conversations of one model that decode at the same moment together.
//
// A conversation's next-token evaluation (`step`) is queued; the first caller that finds no step running
// becomes the leader: it waits until every conversation of the previous step is queued again (each samples
// its token on its own thread in between) or a short window has passed, takes the queued requests that
// can share a forward pass with its own, runs them as one batch (`InferenceContext.decodeStep`) and wakes
// their callers. A conversation that missed a step is no longer waited for until it queues again, and one
// whose generation ended says so (`leave`), so a slow or finished conversation never holds the others back
// by more than one window. A conversation alone steps through `eval(tokens:)`, unbatched.
//
// Fairness with prompts: a prefill chunk (one forward pass of up to maxBatch tokens) and a decode batch
// each hold the pool's lease, handed out in arrival order, so a conversation's prompt runs chunk by chunk
// between the decode steps of the others.
import LeapCore
import LeapKernels

package final class DecodeBatcher: @unchecked Sendable {
    private final class Request {
        let context: InferenceContext
        let token: Int32
        var done = false
        var error: (any Error)?
        init(_ context: InferenceContext, _ token: Int32) {
            self.context = context
            self.token = token
        }
    }

    /// Most conversations stepped in one forward pass. 15 by default: the most tokens the few-token matmul
    /// kernels take (x86/avx512/fewtokens.c), which read each weight once for all of them and keep each
    /// token's one-token result.
    package let maxBatch: Int
    private let monitor = Monitor()
    private var pending: [Request] = []
    private var leading = false
    /// The contexts of the last step that have not left: the next leader waits for them.
    private var expected: Set<ObjectIdentifier> = []
    private var lastStepSeconds = 0.0
    private var counts = (steps: 0, rows: 0, largest: 0)

    /// Forward passes run so far, the rows they stepped, and the largest batch.
    package var statistics: (steps: Int, rows: Int, largest: Int) { monitor.withLock { counts } }

    package init(maxBatch: Int = 15) {
        self.maxBatch = max(1, maxBatch)
    }

    /// Evaluates `token` in `context` at its next position, in one forward pass with the other contexts
    /// stepping at the same moment; afterwards `context` holds the token's logits as after
    /// `eval(tokens: [token])`. Throws what that eval would throw (and then leaves `context` unchanged).
    package func step(_ context: InferenceContext, token: Int32) throws {
        let request = Request(context, token)
        monitor.withLock {
            pending.append(request)
            monitor.broadcast()  // a gathering leader may be waiting for this one
        }
        while true {
            let batch: [Request]? = monitor.withLock {
                while !request.done {
                    if !leading {
                        leading = true
                        return gather(for: request)
                    }
                    monitor.wait()
                }
                return nil
            }
            guard let batch else { break }
            let t0 = Monitor.now
            let errors = InferenceContext.decodeStep(batch.map(\.context), tokens: batch.map(\.token))
            let dt = Monitor.now - t0
            monitor.withLock {
                for (r, e) in zip(batch, errors) {
                    r.error = e
                    r.done = true
                }
                expected = Set(batch.map { ObjectIdentifier($0.context) })
                lastStepSeconds = dt
                counts.steps += 1
                counts.rows += batch.count
                counts.largest = max(counts.largest, batch.count)
                leading = false
                monitor.broadcast()
            }
        }
        if let e = request.error { throw e }
    }

    /// `context` will not step again soon (its generation ended): the next step does not wait for it.
    package func leave(_ context: InferenceContext) {
        monitor.withLock {
            expected.remove(ObjectIdentifier(context))
            monitor.broadcast()
        }
    }

    /// Under the lock, as the leader: waits for the expected contexts (at most one window), then removes
    /// and returns the queued requests that can share a pass with `own` (it first; at most maxBatch).
    private func gather(for own: Request) -> [Request] {
        // The window: long enough for the others to sample (well under a millisecond for 65k logits),
        // short against a step.
        let window = max(0.0005, min(0.005, lastStepSeconds / 4))
        let deadline = Monitor.now + window
        while Monitor.now < deadline {
            let queued = Set(pending.map { ObjectIdentifier($0.context) })
            if expected.isSubset(of: queued) || queued.count >= maxBatch { break }
            monitor.wait(until: deadline)
        }
        var batch = [own]
        var rest: [Request] = []
        for r in pending where r !== own {
            if batch.count < maxBatch && own.context.canBatch(with: r.context) && !batch.contains(where: { $0.context === r.context }) {
                batch.append(r)
            } else {
                rest.append(r)
            }
        }
        pending = rest
        return batch
    }
}
