// leap-bench speculative MODEL.gguf [--threads N] [--gen 128] [--k 8] [--reps 1] [--compare]
//                                   [--draft DRAFT.gguf] [--ceiling] [--prompts FILE]
//
// Greedy chat turns through the runtime (Conversation), without speculation and with prompt lookup
// (n-gram drafting), on two prompt sets: copy-heavy (summarise / extract / rewrite a given passage, edit
// given code) and open chat. Prints decode tok/s of each, the ratio, and the drafted / accepted counts.
// --compare runs scripts/bench_prompt_lookup.py (llama-cpp-python with and without its
// LlamaPromptLookupDecoding, the peer's Python from $LEAP_LLAMA_PYTHON) on the same turns.
// Each side also prints the longest pause between two tokens of a set: when other processes hold the
// cores, llama.cpp's threads wait for each other at every graph node and a token can take seconds, so
// a pause far above the time per token says that side's figure measured the load, not the decoding.
// --draft: also with that draft model (same vocabulary). --ceiling: also with a drafter that replays the
// turn's own greedy output (every guess right, drafting free: a draft model equal to the model without
// its cost), at --k guesses per pass: the most verification can give. --prompts: the two sets from a JSON
// file {"copy": [strings], "chat": [strings]} instead of the built-in ones.
import Glibc
import LeapCore
import LeapJSON
import LeapMessages
import LeapRuntime

/// The passage the copy-heavy prompts work on.
private let passage = """
    The Rhine is one of the major European rivers. It begins in the Swiss canton of Graubunden in the \
    southeastern Swiss Alps, forms part of the Swiss-Austrian, Swiss-Liechtenstein, Swiss-German and then \
    the Franco-German border, then flows through the German Rhineland and the Netherlands and eventually \
    empties into the North Sea. The river has served as a major navigation route since Roman times, when \
    it formed the northern frontier of the empire. Today it carries goods between the industrial regions \
    of Switzerland, France, Germany and the port of Rotterdam, and its valley is known for its vineyards, \
    castles and old towns such as Basel, Strasbourg, Mainz, Koblenz, Cologne and Duesseldorf.
    """

private let code = """
    def total_price(items, tax_rate):
        total = 0
        for item in items:
            total = total + item["price"] * item["quantity"]
        total = total + total * tax_rate
        return total


    def cheapest(items):
        best = None
        for item in items:
            if best is None or item["price"] < best["price"]:
                best = item
        return best
    """

let copyHeavyPrompts = [
    "Summarise this passage in three sentences, keeping its wording where you can:\n\n" + passage,
    "List every city named in this passage, each with the sentence it appears in:\n\n" + passage,
    "Rewrite this passage in the present tense, changing nothing else:\n\n" + passage,
    "Rename the function total_price to compute_total in this code and return the whole code:\n\n" + code,
]

let openChatPrompts = [
    "What are three good habits for staying healthy?",
    "Write a short poem about autumn.",
    "Explain why the sky is blue to a ten-year-old.",
    "Give me some ideas for a weekend trip.",
]

/// Replays a known output: every guess right.
private final class ReplayDrafter: TokenDrafter {
    let output: [Int32]
    init(_ output: [Int32]) { self.output = output }
    func draft(after history: [Int32], generated: Int, count: Int) -> [Int32] {
        Array(output[min(generated, output.count)..<min(generated + count, output.count)])
    }
}

private struct SetFigures {
    var tokens = 0, seconds = 0.0, drafted = 0, accepted = 0, longestPause = 0.0
    var tokensPerSecond: Double { seconds > 0 ? Double(tokens) / seconds : 0 }
}

/// One greedy turn: its completion tokens (ids), decode seconds after the first token, statistics and
/// the longest pause (seconds) between two tokens, the last one to the turn's end included.
private func turn(_ runner: ModelRunner, _ prompt: String, _ o: GenerationOptions) throws -> ([Int32], Double, GenerationStats, Double) {
    var opts = o
    opts.topLogprobs = 0
    let g = try runner.createConversation().generate(ChatMessage(role: .user, text: prompt), options: opts)
    var ids: [Int32] = []
    var completed: GenerationStats?
    var last: ContinuousClock.Instant?, longest = Duration.zero
    while let e = try g.next() {
        if case .token(let t) = e {
            ids.append(t.id)
            let now = ContinuousClock.now
            if let last { longest = max(longest, now - last) }
            last = now
        }
        if case .complete(_, _, let s) = e {
            completed = s
            if let last { longest = max(longest, ContinuousClock.now - last) }
        }
    }
    guard let stats = completed else { throw LeapBenchError("the turn ended without completing") }
    let seconds = stats.tokensPerSecond > 0 ? Double(stats.completionTokens - 1) / stats.tokensPerSecond : 0
    let c = longest.components
    return (ids, seconds, stats, Double(c.seconds) + Double(c.attoseconds) * 1e-18)
}

func benchSpeculative(_ args: [String]) {
    guard let path = args.first, !path.hasPrefix("--") else {
        fputs("usage: leap-bench speculative MODEL.gguf [--threads N] [--gen 128] [--k 8] [--reps 1] [--compare] [--draft DRAFT.gguf] [--ceiling] [--prompts FILE]\n", stderr)
        exit(2)
    }
    let threads = intOption(args, "--threads", 2), nGen = intOption(args, "--gen", 128), k = intOption(args, "--k", 8), reps = max(1, intOption(args, "--reps", 1))
    let draftPath = stringOption(args, "--draft")
    do {
        var ro = RunnerOptions()
        ro.threads = threads
        ro.contextSize = 2048
        ro.draftModelPath = draftPath
        let runner = try ModelRunner.load(path: path, options: ro)
        var base = GenerationOptions()
        base.temperature = 0
        base.repetitionPenalty = 1
        base.maxTokens = nGen
        base.maxDraftTokens = k
        base.drafter = DrafterChoice.none
        print("model: \(runner.modelId), threads \(threads), \(nGen) tokens per turn, at most \(k) drafts per pass")
        var load3 = [Double](repeating: 0, count: 3)
        if getloadavg(&load3, 3) == 3 { print("load average: \(fmt(load3[0], 2)) \(fmt(load3[1], 2)) \(fmt(load3[2], 2))") }
        var ours: [String: Double] = [:]
        var copyPrompts = copyHeavyPrompts, chatPrompts = openChatPrompts
        if let file = stringOption(args, "--prompts") {
            (copyPrompts, chatPrompts) = try promptSets(file)
        }
        for (setName, prompts) in [("copy-heavy", copyPrompts), ("open chat", chatPrompts)] {
            var plain = SetFigures(), lookup = SetFigures(), draft = SetFigures(), ceiling = SetFigures()
            func add(_ f: inout SetFigures, _ r: ([Int32], Double, GenerationStats, Double)) {
                f.tokens += max(0, r.2.completionTokens - 1)
                f.seconds += r.1
                f.drafted += r.2.draftedTokens
                f.accepted += r.2.acceptedDraftTokens
                f.longestPause = max(f.longestPause, r.3)
            }
            for _ in 0..<reps {
                for p in prompts {
                    // Interleaved, so that a change of load on the shared cores hits every variant alike.
                    let reference = try turn(runner, p, base)
                    add(&plain, reference)
                    var o = base
                    o.drafter = .ngram
                    add(&lookup, try turn(runner, p, o))
                    if draftPath != nil {
                        o.drafter = .draftModel
                        add(&draft, try turn(runner, p, o))
                    }
                    if args.contains("--ceiling") {
                        let output = reference.0
                        o.drafter = .custom { ReplayDrafter(output) }
                        add(&ceiling, try turn(runner, p, o))
                    }
                }
            }
            print("\(setName): without speculation \(fmt(plain.tokensPerSecond, 1)) tok/s (longest pause \(fmt(plain.longestPause, 3)) s)")
            print("\(setName): prompt lookup \(fmt(lookup.tokensPerSecond, 1)) tok/s (ratio \(fmt(lookup.tokensPerSecond / plain.tokensPerSecond, 2))x; \(lookup.accepted) of \(lookup.drafted) drafted tokens accepted; longest pause \(fmt(lookup.longestPause, 3)) s)")
            if draftPath != nil {
                print("\(setName): draft model \(fmt(draft.tokensPerSecond, 1)) tok/s (ratio \(fmt(draft.tokensPerSecond / plain.tokensPerSecond, 2))x; \(draft.accepted) of \(draft.drafted) drafted tokens accepted)")
            }
            if args.contains("--ceiling") {
                print("\(setName): every guess right, k = \(k) \(fmt(ceiling.tokensPerSecond, 1)) tok/s (ratio \(fmt(ceiling.tokensPerSecond / plain.tokensPerSecond, 2))x; \(ceiling.accepted) of \(ceiling.drafted) accepted)")
            }
            ours[setName] = lookup.tokensPerSecond
        }
        if args.contains("--compare") {
            // The same turns for the peer: the prompt sets as JSON in a temporary file.
            let sets = JSONValue.object(JSONObject([("copy", .array(copyPrompts.map { .string($0) })),
                                                      ("chat", .array(chatPrompts.map { .string($0) }))])).serialized()
            var name = Array("/tmp/leap-bench-prompts-XXXXXX".utf8CString)
            let fd = mkstemp(&name)
            guard fd >= 0 else { throw LeapBenchError("cannot create a temporary file for the peer's prompts") }
            let file = String(cString: name)
            defer { unlink(file) }
            _ = sets.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
            close(fd)
            let ref = keyValues("'\(llamaPython)' '\(repoScript("bench_prompt_lookup.py"))' '\(path)' --prompts '\(file)' --threads \(threads) --gen \(nGen) --reps \(reps) 2>/dev/null")
            guard let copyPlain = ref["copy_plain_tok_s"], let copyLookup = ref["copy_lookup_tok_s"],
                  let chatPlain = ref["chat_plain_tok_s"], let chatLookup = ref["chat_lookup_tok_s"] else {
                print("llama-cpp-python: not available (set LEAP_LLAMA_PYTHON to a python with llama-cpp-python)")
                return
            }
            func pauses(_ key: String) -> String {
                "\(fmt(ref["\(key)_plain_longest_gap_s"] ?? .nan, 3)) s without, \(fmt(ref["\(key)_lookup_longest_gap_s"] ?? .nan, 3)) s with"
            }
            print("llama-cpp-python copy-heavy: \(fmt(copyPlain, 1)) tok/s without, \(fmt(copyLookup, 1)) tok/s with LlamaPromptLookupDecoding (ratio \(fmt(copyLookup / copyPlain, 2))x); ours with prompt lookup / theirs: \(fmt((ours["copy-heavy"] ?? 0) / copyLookup, 2))x; longest pause \(pauses("copy"))")
            print("llama-cpp-python open chat: \(fmt(chatPlain, 1)) tok/s without, \(fmt(chatLookup, 1)) tok/s with LlamaPromptLookupDecoding (ratio \(fmt(chatLookup / chatPlain, 2))x); ours with prompt lookup / theirs: \(fmt((ours["open chat"] ?? 0) / chatLookup, 2))x; longest pause \(pauses("chat"))")
        }
    } catch {
        fputs("error: \(error)\n", stderr)
        exit(1)
    }
}

/// The prompt sets of a file in the form the peer's script reads: {"copy": [strings], "chat": [strings]}.
private func promptSets(_ file: String) throws -> ([String], [String]) {
    guard let bytes = readFile(file) else { throw LeapBenchError("cannot read \(file)") }
    func strings(_ key: String) throws -> [String] {
        guard let o = try JSONParser.parse(bytes: bytes).objectValue, let a = o[key]?.arrayValue else {
            throw LeapBenchError("\(file): expected {\"copy\": [...], \"chat\": [...]}")
        }
        return try a.map { v in
            guard let s = v.stringValue else { throw LeapBenchError("\(file): \(key) holds a value that is not a string") }
            return s
        }
    }
    return (try strings("copy"), try strings("chat"))
}

private struct LeapBenchError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

private func fmt(_ x: Double, _ digits: Int) -> String {
    var buf = [CChar](repeating: 0, count: 64)
    _ = withVaList([x]) { vsnprintf(&buf, 64, "%.\(digits)f", $0) }
    return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
