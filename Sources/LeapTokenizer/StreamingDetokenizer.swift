// Incremental detokenization for generation: token pieces go in one at a time, and only whole UTF-8
// characters come out (a character whose bytes are spread over several tokens is held back until its last
// byte arrives). Bytes that can never form a character come out as U+FFFD.
//
// The output is the concatenation of the pieces, with the first piece's leading space dropped when the
// vocabulary adds a space prefix (as `Tokenizer.detokenize`); like llama.cpp's streaming, no
// clean_up_tokenization_spaces.

package struct StreamingDetokenizer: Sendable {
    package let tokenizer: Tokenizer
    package let special: Bool
    private var pending: [UInt8] = []  // bytes of an incomplete trailing character
    private var atStart: Bool

    package init(tokenizer: Tokenizer, special: Bool = false) {
        self.tokenizer = tokenizer
        self.special = special
        atStart = tokenizer.addSpacePrefix
    }

    /// Adds one token; returns the text that became complete (valid UTF-8, possibly empty).
    package mutating func append(_ id: Int32) throws -> [UInt8] {
        var p = try tokenizer.piece(id, special: special)[...]
        if p.isEmpty {
            atStart = false
            return []
        }
        if atStart && p.first == 0x20 { p = p.dropFirst() }
        atStart = false
        pending.append(contentsOf: p)
        return drain(final: false)
    }

    /// Ends the stream: returns what was held back (an incomplete character becomes U+FFFD).
    package mutating func finish() -> [UInt8] {
        drain(final: true)
    }

    /// Moves every complete character of `pending` to the output, keeping a trailing incomplete one.
    private mutating func drain(final: Bool) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(pending.count)
        var i = 0
        let n = pending.count
        while i < n {
            let need = validSequenceLength(pending, i)
            if need > 0 {
                if i + need <= n {
                    out.append(contentsOf: pending[i..<(i + need)])
                    i += need
                    continue
                }
                if !final && isValidPrefix(pending, i, need) { break }  // wait for the rest
            }
            out.append(contentsOf: [0xEF, 0xBF, 0xBD])  // one U+FFFD per byte that fits nowhere
            i += 1
        }
        pending.removeFirst(i)
        return out
    }
}

/// The length a UTF-8 lead byte announces when the following available bytes are consistent with a valid
/// sequence (no overlongs, surrogates or values above U+10FFFF); 0 for a byte that cannot start one.
private func validSequenceLength(_ b: [UInt8], _ i: Int) -> Int {
    let b0 = b[i]
    let need: Int
    switch b0 {
    case 0x00...0x7F: return 1
    case 0xC2...0xDF: need = 2
    case 0xE0...0xEF: need = 3
    case 0xF0...0xF4: need = 4
    default: return 0
    }
    return isValidPrefix(b, i, need) ? need : 0
}

/// Whether the bytes from `i` (up to `need` of them, fewer at the end) are a valid start of a sequence.
private func isValidPrefix(_ b: [UInt8], _ i: Int, _ need: Int) -> Bool {
    let b0 = b[i]
    for k in 1..<max(need, 1) where i + k < b.count {
        let c = b[i + k]
        var lo: UInt8 = 0x80
        var hi: UInt8 = 0xBF
        if k == 1 {
            switch b0 {
            case 0xE0: lo = 0xA0
            case 0xED: hi = 0x9F
            case 0xF0: lo = 0x90
            case 0xF4: hi = 0x8F
            default: break
            }
        }
        if c < lo || c > hi { return false }
    }
    return true
}
