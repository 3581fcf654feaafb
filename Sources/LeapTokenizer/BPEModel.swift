// Byte-level BPE merges over integer symbols.
//
// A word (one pre-tokenized piece, as raw bytes) starts as one symbol per byte; the adjacent pair with the
// lowest merge rank (ties: leftmost) is merged until no adjacent pair has a rank, as llama.cpp's
// llm_tokenizer_bpe_session does. Symbols are ids of byte strings: vocabulary tokens keep their id, other
// strings that merges produce get ids above the vocabulary.

struct BPEModel: Sendable {
    /// Number of vocabulary tokens: symbols below it are those tokens, symbols from it on are the byte
    /// strings in `extraBytes` (produced by merges, or single bytes, that are not tokens).
    var tokenCount = 0
    var extraBytes: [[UInt8]] = []
    /// [256] symbol of each single byte.
    var byteSymbol: [Int32] = []
    /// (left, right) → rank << 32 | merged symbol.
    var merges = PairTable(capacity: 16)
    /// [nRanks] left, right and merged symbol of each rank (to recognise stale queue entries).
    var rankLeft: [Int32] = []
    var rankRight: [Int32] = []
    var rankMerged: [Int32] = []

    init() {}

    /// `vocab` maps token spellings (GPT-2 byte-to-unicode) to ids; `merges` are the `"left right"` lines.
    init(tokenCount n: Int, vocab: BytesTable, merges mergeLines: [[UInt8]]) {
        tokenCount = n
        var extras = BytesTable(capacity: 64)  // raw bytes → index in extraBytes
        // The symbol of a spelled string: its token when it is one, else an extra symbol for its bytes.
        func symbol(_ spelled: UnsafeBufferPointer<UInt8>) -> Int32? {
            if let id = vocab.find(spelled) { return id }
            guard let raw = ByteLevel.decode(Array(spelled)) else { return nil }
            let next = Int32(extraBytes.count)
            let e = extras.insertIfAbsent(raw, next)
            if e == next { extraBytes.append(raw) }
            return Int32(n) + e
        }
        byteSymbol = (0..<256).map { b in
            let spelled = ByteLevel.encode([UInt8(b)])
            return spelled.withUnsafeBufferPointer { symbol($0) } ?? -1
        }
        self.merges = PairTable(capacity: mergeLines.count)
        rankLeft = [Int32](repeating: -1, count: mergeLines.count)
        rankRight = rankLeft
        rankMerged = rankLeft
        var joined: [UInt8] = []
        for (rank, line) in mergeLines.enumerated() {
            // Split at the first space after the first byte (a merge of "Ġ" and "Ġ" reads "Ġ Ġ").
            guard line.count >= 3, let space = line[1...].firstIndex(of: 0x20), space + 1 < line.count else { continue }
            let pair = line.withUnsafeBufferPointer { p -> (Int32, Int32, Int32)? in
                let left = UnsafeBufferPointer(rebasing: p[..<space])
                let right = UnsafeBufferPointer(rebasing: p[(space + 1)...])
                // Merges that are not spelled in the byte alphabet can never apply to byte strings.
                guard ByteLevel.isSpelling(left), ByteLevel.isSpelling(right), let l = symbol(left), let r = symbol(right)
                else { return nil }
                joined.removeAll(keepingCapacity: true)
                joined.append(contentsOf: left)
                joined.append(contentsOf: right)
                guard let m = joined.withUnsafeBufferPointer({ symbol($0) }) else { return nil }
                return (l, r, m)
            }
            guard let (l, r, m) = pair, self.merges.find(l, r) == nil else { continue }  // first rank wins
            rankLeft[rank] = l
            rankRight[rank] = r
            rankMerged[rank] = m
            self.merges.insertIfAbsent(l, r, Int64(rank) << 32 | Int64(m))
        }
    }
}

/// Scratch buffers for encoding words; one per tokenize call.
struct BPEScratch {
    var symbol: [Int32] = []  // [n] symbol id, -1 once merged into its left neighbour
    var next: [Int32] = []  // [n]
    var prev: [Int32] = []  // [n]
    var heap: [UInt64] = []  // rank << 32 | left index, min-heap
}

extension BPEModel {
    /// Appends the tokens of one word (raw bytes, non-empty).
    func encodeWord(_ word: UnsafeBufferPointer<UInt8>, _ s: inout BPEScratch, _ out: inout [Int32]) {
        let n = word.count
        if n == 1 {
            emit(byteSymbol[Int(word[0])], &out)
            return
        }
        s.symbol.removeAll(keepingCapacity: true)
        s.next.removeAll(keepingCapacity: true)
        s.prev.removeAll(keepingCapacity: true)
        s.heap.removeAll(keepingCapacity: true)
        for i in 0..<n {
            s.symbol.append(byteSymbol[Int(word[i])])  // -1 only for a byte no symbol could be made of
            s.next.append(i + 1 < n ? Int32(i + 1) : -1)
            s.prev.append(Int32(i - 1))
        }
        for i in 0..<(n - 1) { push(i, i + 1, &s) }

        while let top = popMin(&s.heap) {
            let rank = Int(top >> 32)
            let l = Int(top & 0xFFFF_FFFF)
            let r = Int(s.next[l])
            // Skip entries made stale by an earlier merge.
            guard r >= 0, s.symbol[l] == rankLeft[rank], s.symbol[r] == rankRight[rank] else { continue }
            s.symbol[l] = rankMerged[rank]
            s.symbol[r] = -1
            let rn = Int(s.next[r])
            s.next[l] = Int32(rn)
            if rn >= 0 { s.prev[rn] = Int32(l) }
            let lp = Int(s.prev[l])
            if lp >= 0 { push(lp, l, &s) }
            if rn >= 0 { push(l, rn, &s) }
        }
        var i = 0
        while i >= 0 {
            emit(s.symbol[i], &out)
            i = Int(s.next[i])
        }
    }

    /// A symbol's token, or the single-byte tokens of its bytes (skipping bytes without one).
    @inline(__always)
    func emit(_ sym: Int32, _ out: inout [Int32]) {
        if sym >= 0 && Int(sym) < tokenCount {
            out.append(sym)
            return
        }
        guard sym >= 0 else { return }
        for b in extraBytes[Int(sym) - tokenCount] {
            let bt = byteSymbol[Int(b)]
            if bt >= 0 && Int(bt) < tokenCount { out.append(bt) }
        }
    }

    @inline(__always)
    private func push(_ l: Int, _ r: Int, _ s: inout BPEScratch) {
        guard let payload = merges.find(s.symbol[l], s.symbol[r]) else { return }
        let rank = UInt64(payload >> 32)
        pushMin(&s.heap, rank << 32 | UInt64(l))
    }
}

@inline(__always)
func pushMin(_ heap: inout [UInt64], _ v: UInt64) {
    heap.append(v)
    var i = heap.count - 1
    while i > 0 {
        let parent = (i - 1) >> 1
        if heap[parent] <= v { break }
        heap[i] = heap[parent]
        i = parent
    }
    heap[i] = v
}

@inline(__always)
func popMin(_ heap: inout [UInt64]) -> UInt64? {
    guard let last = heap.popLast() else { return nil }
    if heap.isEmpty { return last }
    let top = heap[0]
    let n = heap.count
    var i = 0
    while true {
        let l = 2 * i + 1
        if l >= n { break }
        let r = l + 1
        let c = (r < n && heap[r] < heap[l]) ? r : l
        if heap[c] >= last { break }
        heap[i] = heap[c]
        i = c
    }
    heap[i] = last
    return top
}
