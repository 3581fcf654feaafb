// SentencePiece-style BPE (`tokenizer.ggml.model = llama`, e.g. Gemma 3), as llama.cpp's
// llm_tokenizer_spm_session: start from UTF-8 characters, repeatedly merge the adjacent pair whose
// concatenation is a vocabulary token with the highest score (ties: leftmost), then emit each symbol's
// token or, for symbols that are not tokens, byte-fallback tokens `<0xNN>`.

/// One candidate merge: symbols `left` and `right` whose joined text (`size` bytes) has `score`.
struct SPMBigram {
    var score: Float
    var left: Int32
    var right: Int32
    var size: Int32

    /// Heap order: higher score first, then lower left index.
    @inline(__always)
    func before(_ o: SPMBigram) -> Bool {
        score > o.score || (score == o.score && left < o.left)
    }
}

struct SPMScratch {
    var start: [Int32] = []  // [n] byte offset of each symbol
    var length: [Int32] = []  // [n] bytes, 0 once merged away
    var next: [Int32] = []  // [n]
    var prev: [Int32] = []  // [n]
    var heap: [SPMBigram] = []
}

struct SPMModel: Sendable {
    /// [256] token of each byte: `<0xNN>`, else the one-byte text, else -1.
    var byteToken: [Int32] = []

    /// Appends the tokens of `text` (spaces already replaced by U+2581).
    func encode(
        _ text: UnsafeBufferPointer<UInt8>, vocab: BytesTable, scores: [Float], _ s: inout SPMScratch,
        _ out: inout [Int32]
    ) {
        let n = text.count
        if n == 0 { return }
        s.start.removeAll(keepingCapacity: true)
        s.length.removeAll(keepingCapacity: true)
        s.next.removeAll(keepingCapacity: true)
        s.prev.removeAll(keepingCapacity: true)
        s.heap.removeAll(keepingCapacity: true)
        var offset = 0
        var index: Int32 = 0
        while offset < n {
            let len = min(utf8LengthFromLead(text[offset]), n - offset)
            s.start.append(Int32(offset))
            s.length.append(Int32(len))
            offset += len
            s.prev.append(index - 1)
            s.next.append(offset == n ? -1 : index + 1)
            index += 1
        }
        let count = s.start.count
        for i in 1..<max(count, 1) { tryAdd(Int32(i - 1), Int32(i), text, vocab, scores, &s) }

        while let b = popBigram(&s.heap) {
            let l = Int(b.left)
            let r = Int(b.right)
            // Skip entries made stale by an earlier merge.
            if s.length[l] == 0 || s.length[r] == 0 || s.length[l] + s.length[r] != b.size { continue }
            s.length[l] += s.length[r]
            s.length[r] = 0
            s.next[l] = s.next[r]
            if s.next[r] >= 0 { s.prev[Int(s.next[r])] = Int32(l) }
            tryAdd(s.prev[l], Int32(l), text, vocab, scores, &s)
            tryAdd(Int32(l), s.next[l], text, vocab, scores, &s)
        }

        var i = 0
        while i >= 0 {
            let span = UnsafeBufferPointer(rebasing: text[Int(s.start[i])..<Int(s.start[i] + s.length[i])])
            if let t = vocab.find(span) {
                out.append(t)
            } else {
                for byte in span {
                    let t = byteToken[Int(byte)]
                    if t >= 0 { out.append(t) }
                }
            }
            i = Int(s.next[i])
        }
    }

    @inline(__always)
    private func tryAdd(
        _ l: Int32, _ r: Int32, _ text: UnsafeBufferPointer<UInt8>, _ vocab: BytesTable, _ scores: [Float],
        _ s: inout SPMScratch
    ) {
        if l < 0 || r < 0 { return }
        let from = Int(s.start[Int(l)])
        let size = Int(s.length[Int(l)] + s.length[Int(r)])
        guard let t = vocab.find(UnsafeBufferPointer(rebasing: text[from..<(from + size)])) else { return }
        pushBigram(&s.heap, SPMBigram(score: scores[Int(t)], left: l, right: r, size: Int32(size)))
    }
}

@inline(__always)
private func pushBigram(_ heap: inout [SPMBigram], _ v: SPMBigram) {
    heap.append(v)
    var i = heap.count - 1
    while i > 0 {
        let parent = (i - 1) >> 1
        if !v.before(heap[parent]) { break }
        heap[i] = heap[parent]
        i = parent
    }
    heap[i] = v
}

@inline(__always)
private func popBigram(_ heap: inout [SPMBigram]) -> SPMBigram? {
    guard let last = heap.popLast() else { return nil }
    if heap.isEmpty { return last }
    let top = heap[0]
    let n = heap.count
    var i = 0
    while true {
        let l = 2 * i + 1
        if l >= n { break }
        let r = l + 1
        let c = (r < n && heap[r].before(heap[l])) ? r : l
        if !heap[c].before(last) { break }
        heap[i] = heap[c]
        i = c
    }
    heap[i] = last
    return top
}
