// Byte-level BPE merges over integer symbols.
//
// A word (one pre-tokenized piece, as raw bytes) starts as one symbol per byte; the adjacent pair with the
// lowest merge rank (ties: leftmost) is merged until no adjacent pair has a rank, as llama.cpp's
// llm_tokenizer_bpe_session does. Symbols are ids of byte strings: vocabulary tokens keep their id, other
// strings that merges produce get ids above the vocabulary.

struct BPEModel: Sendable {
    /// [256] symbol of each single byte.
    var byteSymbol: [Int32] = []
    /// [nSymbols] the token a symbol is, or -1 when the string is not in the vocabulary.
    var symbolToken: [Int32] = []
    /// [nSymbols] byte string of each symbol that is not a token (for the byte fallback), else [].
    var symbolBytes: [[UInt8]] = []
    /// (left, right) → rank << 32 | merged symbol.
    var merges = PairTable(capacity: 16)
    /// [nRanks] left and right symbol of each rank (to recognise stale queue entries).
    var rankLeft: [Int32] = []
    var rankRight: [Int32] = []
    var rankMerged: [Int32] = []
    /// Raw bytes of every vocabulary token that byte-level BPE can produce → token id.
    var rawVocab = BytesTable()

    init() {}

    /// `tokens` are the vocabulary spellings (GPT-2 byte-to-unicode), `merges` the `"left right"` lines.
    init(tokens: [[UInt8]], merges mergeLines: [[UInt8]]) {
        var symbols = BytesTable(capacity: tokens.count + mergeLines.count)
        rawVocab = BytesTable(capacity: tokens.count)
        // Later duplicates win, like llama.cpp's token_to_id map; insert from the end.
        for id in stride(from: tokens.count - 1, through: 0, by: -1) {
            if let raw = ByteLevel.decode(tokens[id]) { rawVocab.insertIfAbsent(raw, Int32(id)) }
        }
        func symbol(_ raw: [UInt8]) -> Int32 {
            let next = Int32(symbolToken.count)
            let s = symbols.insertIfAbsent(raw, next)
            if s == next {
                let token = rawVocab.find(raw) ?? -1
                symbolToken.append(token)
                symbolBytes.append(token >= 0 ? [] : raw)
            }
            return s
        }
        byteSymbol = (0..<256).map { symbol([UInt8($0)]) }
        self.merges = PairTable(capacity: mergeLines.count)
        rankLeft.reserveCapacity(mergeLines.count)
        rankRight.reserveCapacity(mergeLines.count)
        for (rank, line) in mergeLines.enumerated() {
            rankLeft.append(-1)
            rankRight.append(-1)
            rankMerged.append(-1)
            // Split at the first space after the first byte (a merge of "Ġ" and "Ġ" reads "Ġ Ġ").
            guard line.count >= 3, let space = line[1...].firstIndex(of: 0x20),
                let left = ByteLevel.decode(Array(line[..<space])),
                let right = ByteLevel.decode(Array(line[(space + 1)...])),
                !left.isEmpty, !right.isEmpty
            else { continue }  // never applicable to byte strings
            let l = symbol(left)
            let r = symbol(right)
            if self.merges.find(l, r) != nil { continue }  // the first rank of a pair wins
            let merged = symbol(left + right)
            rankLeft[rank] = l
            rankRight[rank] = r
            rankMerged[rank] = merged
            self.merges.insertIfAbsent(l, r, Int64(rank) << 32 | Int64(merged))
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
            s.symbol.append(byteSymbol[Int(word[i])])
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
        let t = symbolToken[Int(sym)]
        if t >= 0 {
            out.append(t)
            return
        }
        for b in symbolBytes[Int(sym)] {
            let bt = symbolToken[Int(byteSymbol[Int(b)])]
            if bt >= 0 { out.append(bt) }
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
