// The body of a JSON string as one grammar element: a small hand-built DFA instead of rules, because
// strings are where a model spends most of its tokens and where the vocabulary walk visits most of the
// trie. One stack frame carries the DFA state, so a string costs one frame per byte (none at all for
// plain ASCII in an unbounded string: the state does not change) instead of a dozen parse stacks.
//
// The element matches the characters after the opening quote and the closing quote. It knows escapes
// (`\uXXXX` with surrogates only as valid pairs), UTF-8 (no overlongs, no surrogates, nothing above
// U+10FFFF), no raw control characters, and counts code points for minLength/maxLength.
//
// State encoding (Int32): count << 5 | sub, where `sub` is the position inside the current character
// and `count` the characters completed so far (saturated at minLength when there is no maxLength, so
// that an unbounded string has one state).

enum StringTerminal {
    static let inString: Int32 = 0
    static let dead: Int32 = -1
    static let closed: Int32 = -2

    // Sub-states.
    private static let s0 = 0, esc = 1, u1 = 2, u2 = 3, u3 = 4, u4 = 5, u2d = 6, h3 = 7, h4 = 8, hs = 9, hu = 10
    private static let l1 = 11, l2 = 12, l3 = 13, l4 = 14, c1 = 15, c2 = 16, c3 = 17, a0 = 18, ed = 19, f0 = 20, f4 = 21
    static let subCount = 22
    private static let completes: Int16 = 64

    /// [subCount * 256]: -1 dead, -2 closing quote, else next sub (+64 when a character completes).
    static let table: [Int16] = {
        var t = [Int16](repeating: -1, count: subCount * 256)
        func set(_ from: Int, _ bytes: ByteSet, _ to: Int, complete: Bool = false) {
            for b in 0..<256 where bytes.contains(UInt8(b)) { t[from * 256 + b] = Int16(to) + (complete ? completes : 0) }
        }
        func chars(_ s: String) -> ByteSet { ByteSet(Array(s.utf8)) }
        let hex = chars("0123456789abcdefABCDEF")
        let cont = ByteSet(0x80...0xBF)
        set(s0, SchemaCompiler.plainASCII, s0, complete: true)
        t[s0 * 256 + 0x22] = -2
        set(s0, chars("\\"), esc)
        set(s0, ByteSet(0xC2...0xDF), c1)
        set(s0, ByteSet([0xE0]), a0)
        set(s0, ByteSet(0xE1...0xEC).union(ByteSet(0xEE...0xEF)), c2)
        set(s0, ByteSet([0xED]), ed)
        set(s0, ByteSet([0xF0]), f0)
        set(s0, ByteSet(0xF1...0xF3), c3)
        set(s0, ByteSet([0xF4]), f4)
        set(esc, chars("\"\\/bfnrt"), s0, complete: true)
        set(esc, chars("u"), u1)
        set(u1, hex.subtracting(chars("dD")), u2)
        set(u1, chars("dD"), u2d)
        set(u2, hex, u3)
        set(u3, hex, u4)
        set(u4, hex, s0, complete: true)
        set(u2d, chars("01234567"), u3)
        set(u2d, chars("89abAB"), h3)
        set(h3, hex, h4)
        set(h4, hex, hs)
        set(hs, chars("\\"), hu)
        set(hu, chars("u"), l1)
        set(l1, chars("dD"), l2)
        set(l2, chars("cdefCDEF"), l3)
        set(l3, hex, l4)
        set(l4, hex, s0, complete: true)
        set(c1, cont, s0, complete: true)
        set(c2, cont, c1)
        set(c3, cont, c2)
        set(a0, ByteSet(0xA0...0xBF), c1)
        set(ed, ByteSet(0x80...0x9F), c1)
        set(f0, ByteSet(0x90...0xBF), c2)
        set(f4, ByteSet(0x80...0x8F), c2)
        return t
    }()

    /// The bytes each sub-state accepts.
    static let subFirst: [ByteSet] = (0..<subCount).map { sub in
        var s = ByteSet()
        for b in 0..<256 where table[sub * 256 + b] != -1 { s.insert(UInt8(b)) }
        return s
    }

    /// Shortest bytes that finish the current character from each sub-state (empty at s0).
    static let finishChar: [[UInt8]] = (0..<subCount).map { sub in
        // Breadth-first over the table to the first completing transition.
        var queue: [(Int, [UInt8])] = [(sub, [])]
        var seen = Set([sub])
        var i = 0
        if sub == 0 { return [] }
        while i < queue.count {
            let (s, path) = queue[i]
            i += 1
            for b in 0..<256 {
                let t = table[s * 256 + b]
                if t < 0 { continue }
                if t & completes != 0 { return path + [UInt8(b)] }
                let n = Int(t & 31)
                if seen.insert(n).inserted { queue.append((n, path + [UInt8(b)])) }
            }
        }
        return []
    }

    @inline(__always)
    static func step(_ state: Int32, _ b: UInt8, minLen: Int32, maxLen: Int32) -> Int32 {
        let sub = Int(state & 31)
        let count = state >> 5
        let t = table[sub &* 256 &+ Int(b)]
        if t == -1 { return dead }
        if t == -2 { return count >= minLen ? closed : dead }
        if sub == 0 && maxLen >= 0 && count >= maxLen { return dead }  // no room for another character
        var n = count
        if t & completes != 0 {
            n = count + 1
            if maxLen < 0 && n > minLen { n = minLen }
        }
        return n << 5 | Int32(t & 31)
    }

    static func firstBytes(_ state: Int32, minLen: Int32, maxLen: Int32) -> ByteSet {
        let sub = Int(state & 31)
        let count = state >> 5
        var s = subFirst[sub]
        if sub == 0 {
            if maxLen >= 0 && count >= maxLen { s = ByteSet() }
            if count >= minLen { s.insert(0x22) } else { s = s.subtracting(ByteSet([0x22])) }
        }
        return s
    }

    /// Bytes that leave the state unchanged (plain ASCII in an unbounded string).
    static func selfLoopBytes(_ state: Int32, minLen: Int32, maxLen: Int32) -> ByteSet {
        if state & 31 == 0 && maxLen < 0 && state >> 5 == minLen { return SchemaCompiler.plainASCII }
        return ByteSet()
    }

    /// Shortest bytes from `state` to the closing quote included.
    static func shortestRest(_ state: Int32, minLen: Int32) -> [UInt8] {
        let sub = Int(state & 31)
        var count = state >> 5
        var out = finishChar[sub]
        if sub != 0 { count += 1 }
        while count < minLen {
            out.append(0x20)
            count += 1
        }
        out.append(0x22)
        return out
    }
}
