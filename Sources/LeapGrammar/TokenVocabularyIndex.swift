// Token masking: which tokens of a vocabulary may come next under a grammar.
//
// The tokens' bytes are put in a trie once per vocabulary, so that shared prefixes are matched once.
// A mask walks the trie depth-first from the matcher's stack set, advancing the set one byte per trie
// edge and pruning a subtree as soon as no stack survives. Two shortcuts keep it fast:
//   - bytes that no stack accepts are skipped without any work (first-byte set of the closure);
//   - bytes after which the stack set is unchanged (inside a string: any ordinary character) reuse the
//     parent's state, so long runs of string content cost one set lookup per trie edge;
//   - leaves only need the first-byte test.
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

/// The trie of a vocabulary's token bytes. Immutable after init; share one per loaded model.
package final class TokenVocabularyIndex: @unchecked Sendable {
    package let vocabularySize: Int
    /// Token bytes by id (empty for special/control tokens, which are never allowed).
    package let tokenBytes: [[UInt8]]
    /// End-of-generation token ids: allowed exactly when the matcher can end.
    package let endOfGeneration: [Int]
    package let nodeCount: Int

    // Trie, in raw buffers so that the walk does no reference counting (freed in deinit).
    private let childStart: UnsafeMutablePointer<Int32>  // [nodeCount] first edge of the node
    private let childCount: UnsafeMutablePointer<Int32>  // [nodeCount]
    private let tokenStart: UnsafeMutablePointer<Int32>  // [nodeCount] first token ending at the node
    private let tokenCount: UnsafeMutablePointer<Int32>  // [nodeCount]
    private let edgeByte: UnsafeMutablePointer<UInt8>    // [nodeCount - 1]
    private let edgeNode: UnsafeMutablePointer<Int32>    // [nodeCount - 1]
    private let tokenIDs: UnsafeMutablePointer<Int32>    // [tokens in the trie]

    /// `tokens[id]` is the byte string of token `id` (empty: never generated under a grammar);
    /// `endOfGeneration` lists the ids that end generation (invalid ids are ignored).
    package init(tokens: [[UInt8]], endOfGeneration: [Int]) {
        vocabularySize = tokens.count
        tokenBytes = tokens
        let eog = Set(endOfGeneration.filter { $0 >= 0 && $0 < tokens.count })
        self.endOfGeneration = eog.sorted()

        var ids = (0..<tokens.count).filter { !tokens[$0].isEmpty && !eog.contains($0) }
        ids.sort { tokens[$0].lexicographicallyPrecedes(tokens[$1]) }

        // Build depth-first over the sorted ids: a node owns a contiguous range of them; the tokens
        // equal to its prefix come first, the rest group by their next byte into children.
        var cStart: [Int32] = [], cCount: [Int32] = [], tStart: [Int32] = [], tCount: [Int32] = []
        var eByte: [UInt8] = [], eNode: [Int32] = [], tIDs: [Int32] = []
        func build(_ lo: Int, _ hi: Int, _ depth: Int) -> Int32 {
            let node = Int32(cStart.count)
            cStart.append(0); cCount.append(0); tStart.append(Int32(tIDs.count)); tCount.append(0)
            var i = lo
            while i < hi && tokens[ids[i]].count == depth {
                tIDs.append(Int32(ids[i]))
                i += 1
            }
            tCount[Int(node)] = Int32(i - lo)
            // Group the rest by byte, reserving the node's edges contiguously before recursing.
            var groups: [(UInt8, Int, Int)] = []
            while i < hi {
                let b = tokens[ids[i]][depth]
                var j = i + 1
                while j < hi && tokens[ids[j]][depth] == b { j += 1 }
                groups.append((b, i, j))
                i = j
            }
            cStart[Int(node)] = Int32(eByte.count)
            cCount[Int(node)] = Int32(groups.count)
            let first = eByte.count
            for g in groups {
                eByte.append(g.0)
                eNode.append(0)
            }
            for (k, g) in groups.enumerated() { eNode[first + k] = build(g.1, g.2, depth + 1) }
            return node
        }
        _ = build(0, ids.count, 0)

        nodeCount = cStart.count
        func copy<T>(_ a: [T]) -> UnsafeMutablePointer<T> {
            let p = UnsafeMutablePointer<T>.allocate(capacity: max(1, a.count))
            a.withUnsafeBufferPointer { if let base = $0.baseAddress { p.initialize(from: base, count: a.count) } }
            return p
        }
        childStart = copy(cStart)
        childCount = copy(cCount)
        tokenStart = copy(tStart)
        tokenCount = copy(tCount)
        edgeByte = copy(eByte)
        edgeNode = copy(eNode)
        tokenIDs = copy(tIDs)
    }

    deinit {
        childStart.deallocate()
        childCount.deallocate()
        tokenStart.deallocate()
        tokenCount.deallocate()
        edgeByte.deallocate()
        edgeNode.deallocate()
        tokenIDs.deallocate()
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
        for i in mask.words.indices { mask.words[i] = 0 }
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
            walk(&core, 0, ss, se, cs, ce, first, same, words)
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

    /// The mask for the matcher's current state (allocating; prefer `fillMask` in a loop).
    package func mask(for m: GrammarMatcher) -> TokenMask {
        var mask = TokenMask(vocabularySize: vocabularySize)
        fillMask(for: m, into: &mask)
        return mask
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

    /// Depth-first walk below `node`. `buf[ss..<se]` is the stack set after the node's prefix,
    /// `buf[cs..<ce]` its closure, `first` the bytes the closure accepts, `same` the bytes after which
    /// the stack set is unchanged.
    private func walk(_ core: inout MatcherCore, _ node: Int32, _ ss: Int, _ se: Int, _ cs: Int, _ ce: Int,
                      _ first: ByteSet, _ same: ByteSet, _ words: UnsafeMutablePointer<UInt64>) {
        let e0 = Int(childStart[Int(node)])
        let e1 = e0 + Int(childCount[Int(node)])
        for k in e0..<e1 {
            let b = edgeByte[k]
            if !first.contains(b) { continue }
            let child = Int(edgeNode[k])
            let t0 = Int(tokenStart[child])
            for t in t0..<t0 + Int(tokenCount[child]) {
                let id = Int(tokenIDs[t])
                words[id >> 6] |= UInt64(1) << UInt64(id & 63)
            }
            if childCount[child] == 0 { continue }
            if same.contains(b) {
                walk(&core, Int32(child), ss, se, cs, ce, first, same, words)
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
                    walk(&core, Int32(child), rs, re, ccs, cce, f2, s2, words)
                }
            }
            core.frames.removeSubrange(framesBefore..<core.frames.count)
            core.buf.removeSubrange(bufBefore..<core.buf.count)
        }
    }
}
