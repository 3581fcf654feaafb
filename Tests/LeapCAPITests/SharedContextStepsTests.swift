// Low-level contexts of one model decoding on several threads at once share the model's decode steps: the
// one-token evals and verification passes of each thread go through the weights in one pass with the
// others', and every context keeps the logits it gets alone. The fixture is Q8_0, whose few-token kernels
// keep each token's one-token summation order on every ISA, so "alone" means bit for bit.
import CLeap
import Glibc
import LeapCAPI
import LeapCore
import LeapModels
import LeapRuntime
import LeapRuntimeTestSupport
import LeapTestFiles
import Testing

@Suite struct SharedContextStepsTests {
    static let path = fixturesDir("models") + "/lfm2-tiny-q8_0.gguf"
    static let steps = 24

    /// Prompt i: a few distinct token ids (any ids of the vocabulary make a valid low-level prompt).
    static func prompt(_ i: Int) -> [Int32] {
        (0..<(5 + i)).map { Int32((i * 37 + $0 * 11) % 200 + 10) }
    }

    /// Per step: the greedy token and the bits of every logit of the row it came from.
    struct Trace: Equatable {
        var tokens: [Int32] = []
        var rows: [[UInt32]] = []
    }

    static func row(_ ctx: OpaquePointer?, _ index: Int32) throws -> [UInt32] {
        var p: UnsafePointer<Float>?
        var n = 0
        guard leap_context_logits(ctx, index, &p, &n) == LEAP_OK, let p else {
            throw LeapError(.internal, String(cString: leap_last_error()))
        }
        return UnsafeBufferPointer(start: p, count: n).map(\.bitPattern)
    }

    static func argmax(_ bits: [UInt32]) -> Int32 {
        let v = bits.map { Float(bitPattern: $0) }
        return Int32(v.indices.max(by: { v[$0] < v[$1] })!)
    }

    static func context(_ model: OpaquePointer?) throws -> OpaquePointer? {
        var p = leap_context_params()
        leap_context_params_init(&p, MemoryLayout<leap_context_params>.size)
        p.context_size = 128
        var ctx: OpaquePointer?
        guard leap_context_create(model, &p, &ctx) == LEAP_OK else { throw LeapError(.internal, String(cString: leap_last_error())) }
        return ctx
    }

    static func eval(_ ctx: OpaquePointer?, _ tokens: [Int32], verify: Bool = false) throws {
        let status = tokens.withUnsafeBufferPointer {
            verify ? leap_context_eval_verify(ctx, $0.baseAddress, $0.count) : leap_context_eval(ctx, $0.baseAddress, $0.count)
        }
        guard status == LEAP_OK else { throw LeapError(.internal, String(cString: leap_last_error())) }
    }

    /// Greedy decoding of prompt i one token at a time.
    static func decode(_ model: OpaquePointer?, _ i: Int) throws -> Trace {
        let ctx = try context(model)
        defer { leap_context_free(ctx) }
        try eval(ctx, prompt(i))
        var trace = Trace()
        for _ in 0..<steps {
            let bits = try row(ctx, -1)
            let token = argmax(bits)
            trace.tokens.append(token)
            trace.rows.append(bits)
            try eval(ctx, [token])
        }
        return trace
    }

    /// Greedy decoding of prompt i in verification passes whose guesses are the greedy tokens `known`
    /// (every one right): a pass of the last token and two guesses yields three rows.
    static func verify(_ model: OpaquePointer?, _ i: Int, known: [Int32]) throws -> Trace {
        let ctx = try context(model)
        defer { leap_context_free(ctx) }
        try eval(ctx, prompt(i))
        var trace = Trace()
        var bits = try row(ctx, -1)
        while trace.tokens.count < steps {
            let token = argmax(bits)
            trace.tokens.append(token)
            trace.rows.append(bits)
            let n = trace.tokens.count
            let guesses = Array(known[n..<min(n + 2, known.count)])
            try eval(ctx, [token] + guesses, verify: true)
            for j in guesses.indices where trace.tokens.count < steps {
                let r = try row(ctx, Int32(j))
                trace.tokens.append(argmax(r))
                trace.rows.append(r)
            }
            bits = try row(ctx, -1)
        }
        return trace
    }

    /// The fixture as a C model handle (released after `body`) and its model's batcher.
    static func withModel(_ body: (OpaquePointer?, DecodeBatcher) throws -> Void) throws {
        let runner = try ModelRunner.load(path: path)
        let model = retainedModelHandle(runner)
        defer { leap_model_free(model) }
        guard let batcher = runner.languageModel?.batcher else { throw LeapError(.internal, "the fixture has no language model") }
        try body(model, batcher)
    }

    /// Runs `context(i)` for i in 0..<4 on four threads at once, expecting each trace to be `alone[i]`, until
    /// `shared` holds of the batcher's statistics (the threads' timing decides whether they meet: up to 5 tries).
    static func together(_ alone: [Trace], _ batcher: DecodeBatcher, until shared: (DecodeBatcher.Statistics) -> Bool,
                         _ context: @escaping (Int) throws -> Trace) throws {
        for _ in 0..<5 {
            let traces = onThreads(4, context)
            for i in 0..<4 {
                #expect(try traces[i].get() == alone[i], "context \(i)")
            }
            if shared(batcher.statistics) { break }
        }
        #expect(shared(batcher.statistics), "the contexts never shared a step as asked: \(batcher.statistics)")
    }

    @Test(.enabled(if: access(SharedContextStepsTests.path, R_OK) == 0))
    func fourThreadsShareStepsAndEachGetsItsLogitsAlone() throws {
        try Self.withModel { model, batcher in
            let alone = try (0..<4).map { try Self.decode(model, $0) }
            #expect(Set(alone.map(\.tokens)).count > 1, "the prompts should lead to different outputs")
            try Self.together(alone, batcher, until: { $0.largest >= 2 }) { i in try Self.decode(model, i) }
        }
    }

    @Test(.enabled(if: access(SharedContextStepsTests.path, R_OK) == 0))
    func verificationPassesShareStepsWithOneTokenSteps() throws {
        try Self.withModel { model, batcher in
            let alone = try (0..<4).map { try Self.decode(model, $0) }
            for i in 0..<4 {  // verification alone keeps the one-token rows
                #expect(try Self.verify(model, i, known: alone[i].tokens) == alone[i], "context \(i) verifying alone")
            }
            try Self.together(alone, batcher, until: { $0.sharedSpans >= 1 }) { i in
                i % 2 == 0 ? try Self.decode(model, i) : try Self.verify(model, i, known: alone[i].tokens)
            }
        }
    }

    /// One thread stepping two contexts in turn: neither waits for the other (it could never queue while
    /// its thread leads), and each gets its own tokens.
    @Test(.enabled(if: access(SharedContextStepsTests.path, R_OK) == 0))
    func oneThreadSteppingTwoContextsInTurn() throws {
        try Self.withModel { model, batcher in
            let alone = try (0..<2).map { try Self.decode(model, $0) }
            let waitedBefore = batcher.statistics.windowsWaitedOut
            let contexts = try (0..<2).map { _ in try Self.context(model) }
            defer { contexts.forEach { leap_context_free($0) } }
            var traces = [Trace(), Trace()]
            for i in 0..<2 { try Self.eval(contexts[i], Self.prompt(i)) }
            for _ in 0..<Self.steps {
                for i in 0..<2 {
                    let bits = try Self.row(contexts[i], -1)
                    traces[i].tokens.append(Self.argmax(bits))
                    traces[i].rows.append(bits)
                    try Self.eval(contexts[i], [Self.argmax(bits)])
                }
            }
            #expect(traces == alone)
            #expect(batcher.statistics.windowsWaitedOut == waitedBefore, "\(batcher.statistics)")
        }
    }
}
