// DecodeBatcher: steps the conversations of one model that decode at the same moment together.
//
// A conversation's next evaluation (`step`) is queued as a span of tokens: its decoded token, or with
// speculative decoding its last token and the drafts after it. The first caller that finds no step running
// becomes the leader: it waits until every conversation of the previous step is queued again (each samples
// its tokens on its own thread in between) or a short window has passed, takes the queued requests that
// can share a forward pass, runs all their rows as one pass (`InferenceContext.decodeStep(_:spans:)`) and
// wakes their callers. A conversation that missed a step is no longer waited for until it queues again, and
// one whose generation ended says so (`leave`), so a slow or finished conversation never holds the others
// back by more than one window. A conversation alone steps alone (the pass of its span only). The leader
// never waits for a context that last stepped on its own thread: one thread stepping several contexts in
// turn (a caller of the low-level API) cannot queue them while it leads.
//
// The row limit: a pass takes at most maxBatch rows, whole spans only. The oldest queued request always
// goes (so none waits forever, and a span longer than the limit still runs, alone); then every other
// queued request whose span still fits, in arrival order. A span that does not fit stays queued, drafts
// and all, for the next pass (it is then the oldest): trimming its drafts would lose guesses the drafter
// paid for, and the next pass starts as soon as this one ends. The leader's own request may be the one
// left: it then leads the next pass too.
//
// Fairness with prompts: a prefill chunk (one forward pass of up to maxBatch tokens) and a decode batch
// each hold the pool's lease, handed out in arrival order, so a conversation's prompt runs chunk by chunk
// between the decode steps of the others.
import Glibc
import LeapCore
import LeapKernels

package final class DecodeBatcher: @unchecked Sendable {
    private final class Request {
        let context: InferenceContext
        let tokens: [Int32]
        let thread = pthread_self()
        /// Conversations in the pass that ran this request (itself included).
        var sequences = 1
        var done = false
        var error: (any Error)?
        init(_ context: InferenceContext, _ tokens: [Int32]) {
            self.context = context
            self.tokens = tokens
        }
    }

    /// What the batcher has run so far.
    package struct Statistics: Sendable, Equatable {
        /// Forward passes, and the rows (tokens) they evaluated.
        package var steps = 0, rows = 0
        /// The most rows in one pass.
        package var largest = 0
        /// Passes in which a span of several rows (a token and its drafts) shared the pass with another
        /// conversation's rows.
        package var sharedSpans = 0
        /// Requests left queued for a later pass because their span did not fit in the rows left.
        package var deferred = 0
        /// Passes whose leader waited out the whole window for a context of the last step that did not come.
        package var windowsWaitedOut = 0
        package init() {}
    }

    /// Most rows (tokens of all the conversations stepped) in one forward pass. 15 by default: the most
    /// tokens the few-token matmul kernels take (x86/avx512/fewtokens.c), which read each weight once for all
    /// of them and keep each token's one-token result.
    package let maxBatch: Int
    private let monitor = Monitor()
    private var pending: [Request] = []
    private var leading = false
    /// The contexts of the last step that have not left, with the thread each stepped on: the next leader
    /// waits for those of other threads.
    private var expected: [ObjectIdentifier: pthread_t] = [:]
    private var lastStepSeconds = 0.0
    private var counts = Statistics()

    package var statistics: Statistics { monitor.withLock { counts } }

    package init(maxBatch: Int = 15) {
        self.maxBatch = max(1, maxBatch)
    }

    /// Evaluates `token` in `context` at its next position, in one forward pass with the other contexts
    /// stepping at the same moment; afterwards `context` holds the token's logits as after
    /// `eval(tokens: [token])`. Throws what that eval would throw (and then leaves `context` unchanged).
    @discardableResult
    package func step(_ context: InferenceContext, token: Int32) throws -> Int {
        try step(context, tokens: [token])
    }

    /// Evaluates `tokens` (the last accepted token and the drafts after it) in `context` at its next
    /// positions, in one forward pass with the other contexts stepping at the same moment; afterwards
    /// `context` holds every row's logits as after `evalDraft(tokens:)`, bit for bit. Throws what that
    /// would throw (and then leaves `context` unchanged). Returns how many conversations shared the pass
    /// (`context` included).
    @discardableResult
    package func step(_ context: InferenceContext, tokens: [Int32]) throws -> Int {
        let request = Request(context, tokens)
        monitor.withLock {
            pending.append(request)
            monitor.broadcast()  // a gathering leader may be waiting for this one
        }
        while true {
            let batch: [Request]? = monitor.withLock {
                while !request.done {
                    if !leading {
                        leading = true
                        return gather()
                    }
                    monitor.wait()
                }
                return nil
            }
            guard let batch else { break }
            let t0 = Monitor.now
            let errors = InferenceContext.decodeStep(batch.map(\.context), spans: batch.map(\.tokens))
            let dt = Monitor.now - t0
            monitor.withLock {
                for (r, e) in zip(batch, errors) {
                    r.error = e
                    r.sequences = batch.count
                    r.done = true
                }
                expected = Dictionary(batch.map { (ObjectIdentifier($0.context), $0.thread) }, uniquingKeysWith: { a, _ in a })
                lastStepSeconds = dt
                let rows = batch.reduce(0) { $0 + $1.tokens.count }
                counts.steps += 1
                counts.rows += rows
                counts.largest = max(counts.largest, rows)
                if batch.count > 1 && batch.contains(where: { $0.tokens.count > 1 }) { counts.sharedSpans += 1 }
                leading = false
                monitor.broadcast()
            }
        }
        if let e = request.error { throw e }
        return request.sequences
    }

    /// `context` will not step again soon (its generation ended): the next step does not wait for it.
    package func leave(_ context: InferenceContext) {
        monitor.withLock {
            expected[ObjectIdentifier(context)] = nil
            monitor.broadcast()
        }
    }

    /// Under the lock, as the leader: waits for the expected contexts (at most one window), then removes
    /// and returns the queued requests of the next pass: the oldest, then the others whose whole span fits
    /// in the rows left (at most maxBatch, and at most every member's own maxBatch: the pass runs on the
    /// scratch of one of them), in arrival order.
    private func gather() -> [Request] {
        // The window: long enough for the others to sample (well under a millisecond for 65k logits),
        // short against a step.
        let window = max(0.0005, min(0.005, lastStepSeconds / 4))
        let deadline = Monitor.now + window
        let me = pthread_self()
        let others = Set(expected.compactMap { pthread_equal($0.value, me) == 0 ? $0.key : nil })
        while true {
            let queued = Set(pending.map { ObjectIdentifier($0.context) })
            let rows = pending.reduce(0) { $0 + $1.tokens.count }
            if others.isSubset(of: queued) || rows >= maxBatch { break }
            if Monitor.now >= deadline {
                counts.windowsWaitedOut += 1
                break
            }
            monitor.wait(until: deadline)
        }
        guard let first = pending.first else { return [] }
        var batch = [first]
        var rows = first.tokens.count
        var limit = min(maxBatch, first.context.maxBatch)
        var rest: [Request] = []
        for r in pending.dropFirst() {
            let fits = rows + r.tokens.count <= min(limit, r.context.maxBatch)
            if fits && first.context.canBatch(with: r.context) && !batch.contains(where: { $0.context === r.context }) {
                batch.append(r)
                rows += r.tokens.count
                limit = min(limit, r.context.maxBatch)
            } else {
                if !fits { counts.deferred += 1 }
                rest.append(r)
            }
        }
        pending = rest
        return batch
    }
}
