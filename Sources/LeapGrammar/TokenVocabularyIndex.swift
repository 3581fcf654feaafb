// Token masking: which tokens of a vocabulary may come next under a grammar.
//
// The tokens' bytes are put in a trie once per vocabulary, so that shared prefixes are matched once.
// A mask walks the trie depth-first from the matcher's stack set, advancing the set one byte per trie
// edge and pruning a subtree as soon as no stack survives. Two shortcuts keep it fast:
//   - bytes that no stack accepts are skipped without any work (first-byte set of the closure);
//   - bytes after which the stack set is unchanged (inside a string: any ordinary character) reuse the
//     parent's state, so long runs of string content cost one set lookup per trie edge;
//   - leaves only need the first-byte test.
// Inside a string (the common case: most generated tokens are string content) the walk is avoided
// altogether: tokens made only of string content are allowed whatever follows the string, so they
// come from a bitset precomputed per vocabulary (or, for length-bounded strings, a per-token character
// count), and only the tokens that close the string are walked, in a second, small trie.
// Masks are also cached per matcher state (inside a long string the state repeats every token).

/// One bit per token id: set = allowed.
package struct TokenMask: Equatable, Sendable {
    package var words: [UInt64]  // [(count + 63) / 64]
    package let count: Int

    package init(vocabularySize: Int) {
        count = max(0, vocabularySize)
        words = [UInt64](repeating: 0, count: (count + 63) / 64)
    }

    @inline(__always) package func contains(_ id: Int) -> Bool {
        guard id >= 0 && id < count else { return false }
        return words[id >> 6] & (UInt64(1) << UInt64(id & 63)) != 0
    }

    package mutating func insert(_ id: Int) {
        guard id >= 0 && id < count else { return }
        words[id >> 6] |= UInt64(1) << UInt64(id & 63)
    }

    package var allowedCount: Int { words.reduce(0) { $0 + $1.nonzeroBitCount } }

    /// The allowed token ids in increasing order.
    package var allowedIDs: [Int] {
        var out: [Int] = []
        for (wi, w) in words.enumerated() {
            var x = w
            while x != 0 {
                out.append(wi * 64 + x.trailingZeroBitCount)
                x &= x - 1
            }
        }
        return out
    }

    /// Sets the logits of disallowed tokens to -infinity (`logits` has at least `count` entries; extra
    /// entries beyond `count` are disallowed too).
    package func apply(to logits: UnsafeMutableBufferPointer<Float>) {
        for i in 0..<logits.count where !contains(i) { logits[i] = -Float.infinity }
    }
}

/// A trie of token byte strings, in one packed edge array (children of a node are contiguous).
final class TokenTrie: @unchecked Sendable {
    struct Edge {
        var firstChild: Int32   // index of the first edge below this one
        var childCount: Int32
        var tokenStart: Int32   // into tokenIDs: the tokens that end here
        var tokenCount: Int16
        var byte: UInt8
    }

    let edges: UnsafeMutablePointer<Edge>  // [edgeCount]
    let edgeCount: Int
    let rootCount: Int                     // the root's children are edges[0 ..< rootCount]
    let tokenIDs: UnsafeMutablePointer<Int32>

    init(tokens: [[UInt8]], ids unsorted: [Int]) {
        let ids = unsorted.sorted { tokens[$0].lexicographicallyPrecedes(tokens[$1]) }
        var edges: [Edge] = []
        var tIDs: [Int32] = []
        // Depth-first over the sorted ids: the ids in lo..<hi share a prefix of length `depth`; group
        // them by their next byte into edges reserved contiguously, then fill each edge's subtree.
        func build(_ lo: Int, _ hi: Int, _ depth: Int) -> (first: Int32, count: Int32) {
            var groups: [(UInt8, Int, Int)] = []
            var i = lo
            while i < hi {
                let b = tokens[ids[i]][depth]
                var j = i + 1
                while j < hi && tokens[ids[j]][depth] == b { j += 1 }
                groups.append((b, i, j))
                i = j
            }
            let first = edges.count
            for g in groups { edges.append(Edge(firstChild: 0, childCount: 0, tokenStart: 0, tokenCount: 0, byte: g.0)) }
            for (k, g) in groups.enumerated() {
                var lo2 = g.1
                let start = tIDs.count
                while lo2 < g.2 && tokens[ids[lo2]].count == depth + 1 {
                    tIDs.append(Int32(ids[lo2]))
                    lo2 += 1
                }
                edges[first + k].tokenStart = Int32(start)
                edges[first + k].tokenCount = Int16(clamping: tIDs.count - start)
                let sub = build(lo2, g.2, depth + 1)
                edges[first + k].firstChild = sub.first
                edges[first + k].childCount = sub.count
            }
            return (Int32(first), Int32(groups.count))
        }
        let root = build(0, ids.count, 0)
        rootCount = Int(root.count)
        edgeCount = edges.count
        let e = UnsafeMutablePointer<Edge>.allocate(capacity: max(1, edges.count))
        edges.withUnsafeBufferPointer { if let b = $0.baseAddress { e.initialize(from: b, count: edges.count) } }
        let t = UnsafeMutablePointer<Int32>.allocate(capacity: max(1, tIDs.count))
        tIDs.withUnsafeBufferPointer { if let b = $0.baseAddress { t.initialize(from: b, count: tIDs.count) } }
        self.edges = e
        tokenIDs = t
    }

    deinit {
        edges.deallocate()
        tokenIDs.deallocate()
    }
}

/// The tokens of a vocabulary, indexed for masking. Immutable after init; share one per loaded model.
package final class TokenVocabularyIndex: @unchecked Sendable {
    package let vocabularySize: Int
    /// Token bytes by id (empty for special/control tokens, which are never allowed).
    package let tokenBytes: [[UInt8]]
    /// End-of-generation token ids: allowed exactly when the matcher can end.
    package let endOfGeneration: [Int]
    let trie: TokenTrie
    /// Tokens that close a string when read from inside one (contain an unescaped quote).
    let closingTrie: TokenTrie
    /// Tokens made only of string content (from a character boundary inside a string).
    let stringBodyMask: [UInt64]
    /// Characters each string-content token starts (-1: not string content).
    let stringBodyChars: [Int32]

    package var nodeCount: Int { trie.edgeCount + 1 }

    /// `tokens[id]` is the byte string of token `id` (empty: never generated under a grammar);
    /// `endOfGeneration` lists the ids that end generation (invalid ids are ignored).
    package init(tokens: [[UInt8]], endOfGeneration: [Int]) {
        vocabularySize = tokens.count
        tokenBytes = tokens
        let eog = Set(endOfGeneration.filter { $0 >= 0 && $0 < tokens.count })
        self.endOfGeneration = eog.sorted()
        let ids = (0..<tokens.count).filter { !tokens[$0].isEmpty && !eog.contains($0) }
        trie = TokenTrie(tokens: tokens, ids: ids)

        // Classify each token by running the string DFA from a character boundary.
        var bodyMask = [UInt64](repeating: 0, count: (tokens.count + 63) / 64)
        var bodyChars = [Int32](repeating: -1, count: tokens.count)
        var closing: [Int] = []
        for id in ids {
            var state = StringTerminal.inString
            var started: Int32 = 0
            for b in tokens[id] {
                if state & 31 == 0 { started += 1 }
                state = StringTerminal.step(state, b, minLen: 0, maxLen: -1)
                if state < 0 { break }
            }
            if state >= 0 {
                bodyMask[id >> 6] |= UInt64(1) << UInt64(id & 63)
                bodyChars[id] = started
            } else if state == StringTerminal.closed {
                closing.append(id)
            }
        }
        stringBodyMask = bodyMask
        stringBodyChars = bodyChars
        closingTrie = TokenTrie(tokens: tokens, ids: closing)
    }

    /// Masks cached per matcher (per state); beyond this many the cache is cleared.
    static let maxCachedMasks = 64

    /// Fills `mask` (resized to the vocabulary if needed) with the tokens allowed after the matcher's
    /// input; end-of-generation tokens are allowed when the matcher can end.
    package func fillMask(for m: GrammarMatcher, into mask: inout TokenMask) {
        if mask.count != vocabularySize { mask = TokenMask(vocabularySize: vocabularySize) }
        let owner = ObjectIdentifier(self)
        if m.maskCacheOwner != owner {
            m.maskCache.removeAll()
            m.maskCacheOwner = owner
        }
        let key = m.cachesMasks ? m.stateKey() : []
        if m.cachesMasks, let cached = m.maskCache[key] {
            mask.words = cached
            return
        }
        let inString = stringPosition(m)
        if let inString {
            // String content tokens, then a walk over the closing tokens only.
            if inString.maxLen < 0 {
                mask.words = stringBodyMask
            } else {
                for i in mask.words.indices { mask.words[i] = 0 }
                let room = inString.maxLen - inString.count
                for (id, n) in stringBodyChars.enumerated() where n >= 0 && n <= room { mask.insert(id) }
            }
        } else {
            for i in mask.words.indices { mask.words[i] = 0 }
        }
        let walkTrie = inString != nil ? closingTrie : trie
        mask.words.withUnsafeMutableBufferPointer { out in
            guard let words = out.baseAddress else { return }
            var core = m.core
            m.core = MatcherCore(m.grammar)  // hand the arena to the walk without a copy
            core.buf.removeAll(keepingCapacity: true)
            core.buf.append(contentsOf: m.stacks)
            let framesBefore = core.frames.count
            let ss = 0, se = m.stacks.count
            let cs = core.closure(ss, se)
            let ce = core.buf.count
            let first = core.firstBytes(cs, ce)
            let same = core.selfLoopBytes(ss, se, cs, ce)
            walk(walkTrie.edges, walkTrie.tokenIDs, &core, 0, walkTrie.rootCount, ss, se, cs, ce, first, same, words)
            core.frames.removeSubrange(framesBefore..<core.frames.count)
            core.buf.removeAll(keepingCapacity: true)
            m.core = core
        }
        if m.canEnd { for id in endOfGeneration { mask.insert(id) } }
        if m.cachesMasks {
            if m.maskCache.count >= TokenVocabularyIndex.maxCachedMasks { m.maskCache.removeAll() }
            m.maskCache[key] = mask.words
        }
    }

    /// When the matcher is exactly inside one string at a character boundary: its count and maxLength.
    private func stringPosition(_ m: GrammarMatcher) -> (count: Int32, maxLen: Int32)? {
        guard m.stacks.count == 1, let t = m.stacks.first, t >= 0 else { return nil }
        let f = m.core.frames[Int(t)]
        let e = m.grammar.elements[Int(f.pos)]
        guard e.kind == .string, f.state & 31 == 0 else { return nil }
        return (f.state >> 5, m.grammar.stringBounds[2 * Int(e.arg) + 1])
    }

    /// The mask for the matcher's current state (allocating; prefer `fillMask` in a loop).
    package func mask(for m: GrammarMatcher) -> TokenMask {
        var mask = TokenMask(vocabularySize: vocabularySize)
        fillMask(for: m, into: &mask)
        return mask
    }

    /// Whether token `id` is allowed now, without computing a mask or changing the state (for samplers
    /// that check the sampled token first and mask only when it is rejected).
    package func allows(_ id: Int, matcher m: GrammarMatcher) -> Bool {
        guard id >= 0 && id < vocabularySize else { return false }
        if endOfGeneration.contains(id) { return m.canEnd }
        let bytes = tokenBytes[id]
        return !bytes.isEmpty && m.canAccept(bytes)
    }

    /// Advances the matcher by token `id`. An end-of-generation token is accepted (without changing
    /// the state) only when the matcher can end. Returns false, state unchanged, if not allowed.
    @discardableResult
    package func acceptToken(_ id: Int, matcher m: GrammarMatcher) -> Bool {
        guard id >= 0 && id < vocabularySize else { return false }
        if endOfGeneration.contains(id) { return m.canEnd }
        let bytes = tokenBytes[id]
        if bytes.isEmpty { return false }
        return m.accept(bytes)
    }

    /// Depth-first walk over the edges `e0 ..< e0 + n`. `buf[ss..<se]` is the stack set before them,
    /// `buf[cs..<ce]` its closure, `first` the bytes the closure accepts, `same` the bytes after which
    /// the stack set is unchanged.
    private func walk(_ edges: UnsafeMutablePointer<TokenTrie.Edge>, _ tokenIDs: UnsafeMutablePointer<Int32>,
                      _ core: inout MatcherCore, _ e0: Int, _ n: Int, _ ss: Int, _ se: Int, _ cs: Int, _ ce: Int,
                      _ first: ByteSet, _ same: ByteSet, _ words: UnsafeMutablePointer<UInt64>) {
        for k in e0..<e0 + n {
            let edge = edges[k]
            let b = edge.byte
            if !first.contains(b) { continue }
            let t0 = Int(edge.tokenStart)
            for t in t0..<t0 + Int(edge.tokenCount) {
                let id = Int(tokenIDs[t])
                words[id >> 6] |= UInt64(1) << UInt64(id & 63)
            }
            if edge.childCount == 0 { continue }
            if same.contains(b) {
                walk(edges, tokenIDs, &core, Int(edge.firstChild), Int(edge.childCount), ss, se, cs, ce, first, same, words)
                continue
            }
            let framesBefore = core.frames.count
            let bufBefore = core.buf.count
            core.match(b, cs, ce)
            core.dedup(from: bufBefore)
            let rs = bufBefore, re = core.buf.count
            if re > rs {
                let ccs = core.closure(rs, re)
                let cce = core.buf.count
                let f2 = core.firstBytes(ccs, cce)
                if !f2.isEmpty {
                    let s2 = core.selfLoopBytes(rs, re, ccs, cce)
                    walk(edges, tokenIDs, &core, Int(edge.firstChild), Int(edge.childCount), rs, re, ccs, cce, f2, s2, words)
                }
            }
            core.frames.removeSubrange(framesBefore..<core.frames.count)
            core.buf.removeSubrange(bufBefore..<core.buf.count)
        }
    }
}
