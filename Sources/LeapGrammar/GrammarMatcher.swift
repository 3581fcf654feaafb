// The incremental byte matcher: a set of parse stacks over a `Grammar` (a pushdown automaton that keeps
// every live interpretation, so optional properties and overlapping anyOf branches need no lookahead).
//
// A stack is a linked list of frames in an arena; frames are immutable, so stacks share their tails and
// a byte step only appends frames. A frame's `pos` is the element it waits for; its `parent` is the
// caller frame, whose `pos` is already the element after the rule reference (the return address).
// Stacks are kept normalized: the top element is a byte, a byte class or a star, or the stack is the
// special value `accepted` (-1: the root rule has been completed).
//
// A star element `[set]*` matches without creating a frame (the stack stays the same), which makes the
// inside of strings cheap. The "closure" of a stack set adds, for every star top, the stacks that follow
// the star (what happens when it matches zero more bytes).

struct Frame {
    var pos: Int32
    var parent: Int32
    /// Position inside a string terminal (see StringTerminal); 0 elsewhere.
    var state: Int32 = 0
}

/// The engine: arena, scratch list stack and the primitive steps. A struct so that the hot loops run on
/// `inout self` without class exclusivity checks.
struct MatcherCore {
    static let accepted: Int32 = -1
    /// Nested rule references expanded without consuming a byte; deeper means a broken grammar.
    static let maxExpandDepth = 1000
    /// Entries in one closure; more means runaway ambiguity.
    static let maxClosure = 1 << 16

    let elements: [GrammarElement]
    let altStarts: [Int32]
    let ruleAlts: [Int32]
    let classes: [ByteSet]
    let stringBounds: [Int32]
    let root: Int32

    /// Frame arena; grows with each byte, compacted by the matcher.
    var frames: [Frame] = []
    /// Scratch: a stack of lists of stack tops (closures, match results), each a range of `buf`.
    var buf: [Int32] = []

    init(_ g: Grammar) {
        elements = g.elements
        altStarts = g.altStarts
        ruleAlts = g.ruleAlts
        classes = g.classes
        stringBounds = g.stringBounds
        root = g.root
    }

    /// Appends to `buf` the normalized stacks for "at element `pos` with caller `parent`".
    mutating func expand(_ pos: Int32, _ parent: Int32, _ depth: Int) {
        if depth > MatcherCore.maxExpandDepth { return }
        let e = elements[Int(pos)]
        switch e.kind {
        case .end:
            if parent < 0 { buf.append(MatcherCore.accepted); return }
            let p = frames[Int(parent)]
            let k = elements[Int(p.pos)].kind
            if k == .byte || k == .byteClass || k == .star || k == .string {
                buf.append(parent)  // the caller's frame is already a normalized stack
            } else {
                expand(p.pos, p.parent, depth + 1)
            }
        case .ref:
            // A reference in tail position returns straight to our caller (keeps right recursion flat).
            var cont = parent
            if elements[Int(pos) + 1].kind != .end {
                frames.append(Frame(pos: pos + 1, parent: parent))
                cont = Int32(frames.count - 1)
            }
            let r = Int(e.arg)
            for a in Int(ruleAlts[r])..<Int(ruleAlts[r + 1]) {
                expand(altStarts[a], cont, depth + 1)
            }
        case .byte, .byteClass, .star, .string:
            frames.append(Frame(pos: pos, parent: parent))
            buf.append(Int32(frames.count - 1))
        }
    }

    /// Appends the initial stacks of the root rule.
    mutating func expandRoot() {
        let r = Int(root)
        for a in Int(ruleAlts[r])..<Int(ruleAlts[r + 1]) { expand(altStarts[a], -1, 0) }
    }

    /// Appends the closure of the list `buf[s..<e]` (the list itself plus what follows its stars);
    /// returns the closure's start.
    mutating func closure(_ s: Int, _ e: Int) -> Int {
        let start = buf.count
        for i in s..<e { buf.append(buf[i]) }
        var i = start
        while i < buf.count && buf.count - start < MatcherCore.maxClosure {
            let t = buf[i]
            if t >= 0 {
                let f = frames[Int(t)]
                if elements[Int(f.pos)].kind == .star { expand(f.pos + 1, f.parent, 0) }
            }
            i += 1
        }
        return start
    }

    /// Appends the stacks that result from feeding byte `b` to the closure `buf[cs..<ce]`.
    mutating func match(_ b: UInt8, _ cs: Int, _ ce: Int) {
        for i in cs..<ce {
            let t = buf[i]
            if t < 0 { continue }
            let f = frames[Int(t)]
            let e = elements[Int(f.pos)]
            switch e.kind {
            case .byte:
                if UInt8(truncatingIfNeeded: e.arg) == b { expand(f.pos + 1, f.parent, 0) }
            case .byteClass:
                if classes[Int(e.arg)].contains(b) { expand(f.pos + 1, f.parent, 0) }
            case .star:
                if classes[Int(e.arg)].contains(b) { buf.append(t) }
            case .string:
                let k = 2 * Int(e.arg)
                let n = StringTerminal.step(f.state, b, minLen: stringBounds[k], maxLen: stringBounds[k + 1])
                if n == StringTerminal.closed {
                    expand(f.pos + 1, f.parent, 0)
                } else if n >= 0 {
                    frames.append(Frame(pos: f.pos, parent: f.parent, state: n))
                    buf.append(Int32(frames.count - 1))
                }
            case .end, .ref:
                break
            }
        }
    }

    /// The bytes that some entry of the closure `buf[cs..<ce]` accepts.
    func firstBytes(_ cs: Int, _ ce: Int) -> ByteSet {
        var u = ByteSet()
        for i in cs..<ce {
            let t = buf[i]
            if t < 0 { continue }
            let f = frames[Int(t)]
            let e = elements[Int(f.pos)]
            switch e.kind {
            case .byte: u.insert(UInt8(truncatingIfNeeded: e.arg))
            case .byteClass, .star: u = u.union(classes[Int(e.arg)])
            case .string:
                let k = 2 * Int(e.arg)
                u = u.union(StringTerminal.firstBytes(f.state, minLen: stringBounds[k], maxLen: stringBounds[k + 1]))
            case .end, .ref: break
            }
        }
        return u
    }

    /// Bytes after which the stack set `buf[ss..<se]` is unchanged: with a single star top, the bytes
    /// of its class that nothing else in the closure `buf[cs..<ce]` accepts.
    func selfLoopBytes(_ ss: Int, _ se: Int, _ cs: Int, _ ce: Int) -> ByteSet {
        guard se - ss == 1 else { return ByteSet() }
        let t = buf[ss]
        guard t >= 0 else { return ByteSet() }
        let ft = frames[Int(t)]
        let e = elements[Int(ft.pos)]
        if e.kind == .string {
            let k = 2 * Int(e.arg)
            return StringTerminal.selfLoopBytes(ft.state, minLen: stringBounds[k], maxLen: stringBounds[k + 1])
        }
        guard e.kind == .star else { return ByteSet() }
        var others = ByteSet()
        for i in cs..<ce where i != cs {  // the closure starts with the list itself
            let x = buf[i]
            if x < 0 { continue }
            let ex = elements[Int(frames[Int(x)].pos)]
            switch ex.kind {
            case .byte: others.insert(UInt8(truncatingIfNeeded: ex.arg))
            case .byteClass, .star: others = others.union(classes[Int(ex.arg)])
            case .string: others = ByteSet(0...255)
            case .end, .ref: break
            }
        }
        return classes[Int(e.arg)].subtracting(others)
    }

    func sameStack(_ a0: Int32, _ b0: Int32) -> Bool {
        var a = a0, b = b0
        while true {
            if a == b { return true }
            if a < 0 || b < 0 { return false }
            let fa = frames[Int(a)], fb = frames[Int(b)]
            if fa.pos != fb.pos || fa.state != fb.state { return false }
            a = fa.parent
            b = fb.parent
        }
    }

    /// Removes structurally duplicate stacks from `buf[s...]`.
    mutating func dedup(from s: Int) {
        let n = buf.count
        if n - s < 2 { return }
        var w = s
        for i in s..<n {
            let x = buf[i]
            var dup = false
            for j in s..<w where sameStack(buf[j], x) {
                dup = true
                break
            }
            if !dup {
                buf[w] = x
                w += 1
            }
        }
        buf.removeSubrange(w..<n)
    }

    /// Copies the stacks in `tops` into a fresh arena (dropping the garbage of earlier steps).
    mutating func compact(_ tops: inout [Int32]) {
        var fresh: [Frame] = []
        var map = [Int32](repeating: -2, count: frames.count)
        func copy(_ t: Int32) -> Int32 {
            if t < 0 { return t }
            if map[Int(t)] != -2 { return map[Int(t)] }
            // Walk down to the first already-copied frame, then copy back up (no recursion on depth).
            var chain: [Int32] = []
            var x = t
            while x >= 0 && map[Int(x)] == -2 {
                chain.append(x)
                x = frames[Int(x)].parent
            }
            var parent: Int32 = x < 0 ? x : map[Int(x)]
            for c in chain.reversed() {
                fresh.append(Frame(pos: frames[Int(c)].pos, parent: parent, state: frames[Int(c)].state))
                parent = Int32(fresh.count - 1)
                map[Int(c)] = parent
            }
            return parent
        }
        for i in tops.indices { tops[i] = copy(tops[i]) }
        frames = fresh
    }
}

/// Matches bytes against a grammar incrementally.
///
/// Not thread-safe: one matcher per generation. `clone()` gives an independent copy (cheap: the arena is
/// shared copy-on-write until either side advances).
package final class GrammarMatcher {
    package let grammar: Grammar
    var core: MatcherCore
    /// The live stacks (normalized tops); never empty after a successful step.
    var stacks: [Int32] = []
    package private(set) var canEnd = false
    package private(set) var isComplete = false
    /// Masks already computed for a stack set, for one vocabulary index (see TokenVocabularyIndex).
    var maskCache: [[Int32]: [UInt64]] = [:]
    var maskCacheOwner: ObjectIdentifier?
    /// Reuse masks computed for an identical state (on by default; off to measure the raw walk).
    package var cachesMasks = true
    /// Arena size that triggers compaction (grows with the live size so compaction stays amortized).
    var compactThreshold = 1 << 15

    package init(grammar: Grammar) {
        self.grammar = grammar
        core = MatcherCore(grammar)
        reset()
    }

    /// Back to the start of the grammar (cached masks are kept: they stay valid).
    package func reset() {
        core.frames.removeAll(keepingCapacity: true)
        core.buf.removeAll(keepingCapacity: true)
        core.expandRoot()
        core.dedup(from: 0)
        stacks = core.buf
        core.buf.removeAll(keepingCapacity: true)
        updateEndState()
    }

    package func clone() -> GrammarMatcher {
        let m = GrammarMatcher(copying: self)
        return m
    }

    private init(copying o: GrammarMatcher) {
        grammar = o.grammar
        core = o.core
        stacks = o.stacks
        canEnd = o.canEnd
        isComplete = o.isComplete
        maskCache = o.maskCache
        maskCacheOwner = o.maskCacheOwner
        cachesMasks = o.cachesMasks
    }

    /// True when some continuation of the input so far is still valid (false only for a grammar that
    /// matches nothing).
    package var isAlive: Bool { !stacks.isEmpty }

    /// Live parse stacks (interpretations of the input so far); for tests and diagnostics.
    package var stackCount: Int { stacks.count }

    /// Feeds one byte; returns false (and leaves the state unchanged) if the grammar does not allow it.
    @discardableResult
    package func accept(_ byte: UInt8) -> Bool {
        let ok = step(byte)
        if ok {
            updateEndState()
            maybeCompact()
        }
        return ok
    }

    /// Feeds bytes, all or nothing: on a disallowed byte the state is restored and false returned.
    @discardableResult
    package func accept<C: Collection>(_ bytes: C) -> Bool where C.Element == UInt8 {
        let savedStacks = stacks
        let savedFrames = core.frames.count
        for b in bytes where !step(b) {
            stacks = savedStacks
            core.frames.removeSubrange(savedFrames..<core.frames.count)
            return false
        }
        updateEndState()
        maybeCompact()
        return true
    }

    /// Whether `bytes` could be fed now (the state is left unchanged).
    package func canAccept<C: Collection>(_ bytes: C) -> Bool where C.Element == UInt8 {
        let savedStacks = stacks
        let savedFrames = core.frames.count
        var ok = true
        for b in bytes where !step(b) {
            ok = false
            break
        }
        stacks = savedStacks
        core.frames.removeSubrange(savedFrames..<core.frames.count)
        return ok
    }

    /// One byte step without the end-state bookkeeping.
    private func step(_ b: UInt8) -> Bool {
        let framesBefore = core.frames.count
        core.buf.removeAll(keepingCapacity: true)
        core.buf.append(contentsOf: stacks)
        let cs = core.closure(0, stacks.count)
        let ce = core.buf.count
        core.match(b, cs, ce)
        core.dedup(from: ce)
        if core.buf.count == ce {
            core.frames.removeSubrange(framesBefore..<core.frames.count)
            core.buf.removeAll(keepingCapacity: true)
            return false
        }
        stacks = Array(core.buf[ce...])
        core.buf.removeAll(keepingCapacity: true)
        return true
    }

    private func updateEndState() {
        core.buf.removeAll(keepingCapacity: true)
        core.buf.append(contentsOf: stacks)
        let cs = core.closure(0, stacks.count)
        var anyAccepted = false, allAccepted = true
        for i in cs..<core.buf.count {
            if core.buf[i] == MatcherCore.accepted { anyAccepted = true } else { allAccepted = false }
        }
        canEnd = anyAccepted
        isComplete = anyAccepted && allAccepted
        core.buf.removeAll(keepingCapacity: true)
    }

    private func maybeCompact() {
        if core.frames.count > compactThreshold {
            core.compact(&stacks)
            compactThreshold = Swift.max(1 << 15, 4 * core.frames.count)
        }
    }

    /// The bytes that may come next (for tests and debugging).
    package var allowedNextBytes: ByteSet {
        core.buf.removeAll(keepingCapacity: true)
        core.buf.append(contentsOf: stacks)
        let cs = core.closure(0, stacks.count)
        let u = core.firstBytes(cs, core.buf.count)
        core.buf.removeAll(keepingCapacity: true)
        return u
    }

    /// A shortest byte string that completes the input so far (empty when the matcher can end): what a
    /// runtime can append to close a document cut short, and how tests force a walk to finish.
    package func shortestCompletion() -> [UInt8] {
        if canEnd { return [] }
        var best: Int32 = -2
        var bestLen = Int.max
        for t in stacks {
            var len = 0
            var x = t
            while x >= 0 {
                len += x == t ? topLength(core.frames[Int(x)]) : grammar.tailLength(Int(core.frames[Int(x)].pos))
                x = core.frames[Int(x)].parent
            }
            if len < bestLen {
                bestLen = len
                best = t
            }
        }
        var out: [UInt8] = []
        var x = best
        while x >= 0 {
            let f = core.frames[Int(x)]
            if x == best, let bounds = stringBounds(f) {
                out += StringTerminal.shortestRest(f.state, minLen: bounds.min)
                grammar.appendShortest(from: Int(f.pos) + 1, to: &out)
            } else {
                grammar.appendShortest(from: Int(f.pos), to: &out)
            }
            x = f.parent
        }
        return out
    }

    /// (minLength, maxLength) when the frame waits in a string terminal.
    private func stringBounds(_ f: Frame) -> (min: Int32, max: Int32)? {
        let e = grammar.elements[Int(f.pos)]
        guard e.kind == .string else { return nil }
        return (grammar.stringBounds[2 * Int(e.arg)], grammar.stringBounds[2 * Int(e.arg) + 1])
    }

    /// Shortest completion length of a top frame (which may be inside a string).
    private func topLength(_ f: Frame) -> Int {
        guard let bounds = stringBounds(f) else { return grammar.tailLength(Int(f.pos)) }
        return StringTerminal.shortestRest(f.state, minLen: bounds.min).count + grammar.tailLength(Int(f.pos) + 1)
    }

    /// A key that identifies the state (the element positions of every stack).
    func stateKey() -> [Int32] {
        var key: [Int32] = []
        for t in stacks {
            var x = t
            while x >= 0 {
                key.append(core.frames[Int(x)].pos)
                key.append(core.frames[Int(x)].state)
                x = core.frames[Int(x)].parent
            }
            key.append(x == MatcherCore.accepted && t == MatcherCore.accepted ? -3 : -2)
        }
        return key
    }
}
