// Splitting text at special tokens before tokenization (llama.cpp's tokenizer_st_partition).
//
// Special tokens (CONTROL, USER_DEFINED, UNKNOWN) are tried longest first; each claims every occurrence,
// left to right, inside the text not yet claimed. With parse_special = false only USER_DEFINED tokens are
// matched. Tokens with LSTRIP / RSTRIP also swallow the whitespace next to them.
//
// Rather than scanning the text once per special token (llama.cpp), all occurrences are found in one pass
// with a trie and then accepted in that priority order, which selects the same matches.

/// A piece of text to tokenize, or a special token.
enum Fragment {
    case text(Range<Int>)
    case token(Int32)
}

struct SpecialTokenMatcher: Sendable {
    /// [nSpecial] token ids by priority: longest text first, ties by id.
    var byPriority: [Int32] = []
    /// [nSpecial] whether the token is matched when parse_special is false (USER_DEFINED only).
    var matchedAsText: [Bool] = []
    /// [nSpecial] LSTRIP / RSTRIP.
    var lstrip: [Bool] = []
    var rstrip: [Bool] = []
    /// Trie over the token texts: [256] children of the root, deeper edges in `edges`, and the priority of
    /// the token ending at each node (-1 when none).
    var rootChild: [Int32] = [Int32](repeating: -1, count: 256)
    var edges = PairTable(capacity: 16)
    var nodeToken: [Int32] = [-1]

    init() {}

    init(ids: [Int32], texts: [[UInt8]], attributes: [TokenAttributes]) {
        byPriority = ids.sorted { a, b in
            let la = texts[Int(a)].count
            let lb = texts[Int(b)].count
            return la != lb ? la > lb : a < b
        }
        edges = PairTable(capacity: byPriority.reduce(0) { $0 + texts[Int($1)].count })
        for (priority, id) in byPriority.enumerated() {
            let a = attributes[Int(id)]
            matchedAsText.append(a.isDisjoint(with: [.control, .unknown]))
            lstrip.append(a.contains(.lstrip))
            rstrip.append(a.contains(.rstrip))
            var node: Int32 = 0
            for (depth, b) in texts[Int(id)].enumerated() {
                let existing = depth == 0 ? rootChild[Int(b)] : (edges.find(node, Int32(b)).map { Int32($0) } ?? -1)
                if existing >= 0 {
                    node = existing
                    continue
                }
                let child = Int32(nodeToken.count)
                nodeToken.append(-1)
                if depth == 0 { rootChild[Int(b)] = child } else { edges.insertIfAbsent(node, Int32(b), Int64(child)) }
                node = child
            }
            if node > 0 && nodeToken[Int(node)] < 0 { nodeToken[Int(node)] = Int32(priority) }
        }
    }

    /// Splits `text` into text ranges and special tokens.
    func partition(_ text: UnsafeBufferPointer<UInt8>, parseSpecial: Bool) -> [Fragment] {
        let n = text.count
        if n == 0 { return [] }
        // Every (priority, start, end) occurrence of an enabled special token.
        var found: [(priority: Int32, start: Int, end: Int)] = []
        for i in 0..<n {
            var node = rootChild[Int(text[i])]
            var j = i + 1
            while node >= 0 {
                let p = nodeToken[Int(node)]
                if p >= 0 && (parseSpecial || matchedAsText[Int(p)]) { found.append((p, i, j)) }
                if j >= n { break }
                node = edges.find(node, Int32(text[j])).map { Int32($0) } ?? -1
                j += 1
            }
        }
        if found.isEmpty { return [.text(0..<n)] }
        found.sort { $0.priority != $1.priority ? $0.priority < $1.priority : $0.start < $1.start }

        // state: 0 = text, 1 = inside a special token, 2 = whitespace removed by LSTRIP / RSTRIP.
        var state = [UInt8](repeating: 0, count: n)
        var tokenAt = [Int32: Int32]()  // start offset → token id
        var lastEnd = -1
        var lastPriority: Int32 = -1
        for m in found {
            if m.priority != lastPriority {
                lastPriority = m.priority
                lastEnd = -1
            }
            if m.start < lastEnd { continue }
            var free = true
            for k in m.start..<m.end where state[k] != 0 {
                free = false
                break
            }
            if !free { continue }
            for k in m.start..<m.end { state[k] = 1 }
            tokenAt[Int32(m.start)] = byPriority[Int(m.priority)]
            lastEnd = m.end
            if lstrip[Int(m.priority)] {
                var k = m.start - 1
                while k >= 0 && state[k] == 0 && isCSpace(text[k]) {
                    state[k] = 2
                    k -= 1
                }
            }
            if rstrip[Int(m.priority)] {
                var k = m.end
                while k < n && state[k] == 0 && isCSpace(text[k]) {
                    state[k] = 2
                    k += 1
                }
                lastEnd = k
            }
        }

        var fragments: [Fragment] = []
        var i = 0
        while i < n {
            switch state[i] {
            case 0:
                let s = i
                while i < n && state[i] == 0 { i += 1 }
                fragments.append(.text(s..<i))
            case 1:
                if let id = tokenAt[Int32(i)] { fragments.append(.token(id)) }
                i += 1
                while i < n && state[i] == 1 && tokenAt[Int32(i)] == nil { i += 1 }
            default:
                i += 1
            }
        }
        return fragments
    }
}

/// C's isspace in the "C" locale.
@inline(__always)
func isCSpace(_ b: UInt8) -> Bool {
    b == 0x20 || (b >= 0x09 && b <= 0x0D)
}
