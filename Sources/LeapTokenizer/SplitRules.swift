// The split rules of PreTokenizer.swift, over one text fragment decoded to codepoints.
//
// GPT-2, LLAMA3, Qwen2 and Qwen3.5 follow llama.cpp's hand-written matchers (unicode.cpp), which are what
// llama.cpp actually runs for those regexes; the others follow ECMAScript regex semantics (leftmost match,
// greedy, first alternative wins) as llama.cpp's std::regex fallback evaluates them, where `\s` is the
// White_Space property and `\p{X}` the general category.

/// A fragment decoded to codepoints; positions outside the current piece read as "out of range".
struct CodepointText {
    var cps: [UInt32] = []  // [n]
    var flags: [UInt8] = []  // [n] CodepointClass bits

    mutating func reset(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        cps.removeAll(keepingCapacity: true)
        flags.removeAll(keepingCapacity: true)
        var exact = true
        var i = 0
        while i < bytes.count {
            let (cp, n) = decodeLenientUTF8(bytes, i)
            // Re-encoding must give the same bytes, or the pieces are cut from a re-encoded copy.
            let encodedLength = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4
            if encodedLength != n || cp > 0x10FFFF || (cp == 0xFFFD && n == 1) { exact = false }
            cps.append(cp)
            flags.append(codepointFlags(cp))
            i += n
        }
        return exact
    }
}

private let inRange: UInt8 = 0x80
private let lwn = CodepointClass.letter | CodepointClass.whitespace | CodepointClass.number
private let outOfRange: UInt32 = 0xFFFF_FFFF

/// Applies `rule` to the piece [start, end) of `text`, appending piece lengths (in codepoints) to `out`.
func applySplitRule(
    _ rule: SplitRule, _ text: UnsafeBufferPointer<UInt32>, _ flagsBuffer: UnsafeBufferPointer<UInt8>,
    _ start: Int, _ end: Int, _ out: inout [Int]
) {
    @inline(__always) func cp(_ i: Int) -> UInt32 { (i >= start && i < end) ? text[i] : outOfRange }
    @inline(__always) func fl(_ i: Int) -> UInt8 { (i >= start && i < end) ? flagsBuffer[i] | inRange : 0 }
    @inline(__always) func isWS(_ i: Int) -> Bool { fl(i) & CodepointClass.whitespace != 0 }

    switch rule {
    case .gpt2:
        splitGPT2(cp, fl, start, end, &out)
    case .llama3:
        splitLlama3(cp, fl, start, end, digitGroup: 3, marks: false, &out)
    case .qwen2:
        splitLlama3(cp, fl, start, end, digitGroup: 1, marks: false, &out)
    case .qwen35:
        splitLlama3(cp, fl, start, end, digitGroup: 1, marks: true, &out)
    case .newlineRuns:
        var pos = start
        while pos < end {
            let isNewline = text[pos] == 0x0A
            let runStart = pos
            while pos < end && (text[pos] == 0x0A) == isNewline { pos += 1 }
            out.append(pos - runStart)
        }
    case .trailingWhitespace:
        var q = end
        while q > start && isWS(q - 1) { q -= 1 }
        if q > start { out.append(q - start) }
        if q < end { out.append(end - q) }
    default:
        // Leftmost non-overlapping matches; the text between matches is kept as pieces too.
        var pos = start
        var pieceStart = start
        while pos < end {
            if let matchEnd = matchAt(rule, pos, cp, fl), matchEnd > pos {
                if pos > pieceStart { out.append(pos - pieceStart) }
                out.append(matchEnd - pos)
                pos = matchEnd
                pieceStart = pos
            } else {
                pos += 1
            }
        }
        if end > pieceStart { out.append(end - pieceStart) }
    }
}

/// Where a match of an ECMAScript-style rule starting at `pos` ends, or nil.
@inline(__always)
private func matchAt(
    _ rule: SplitRule, _ pos: Int, _ cp: (Int) -> UInt32, _ fl: (Int) -> UInt8
) -> Int? {
    // Literal classes see non-ASCII whitespace as U+000B, as llama.cpp's std::wregex input does.
    @inline(__always) func view(_ i: Int) -> UInt32 {
        let c = cp(i)
        return (c >= 0x80 && c != outOfRange && fl(i) & CodepointClass.whitespace != 0) ? 0x0B : c
    }
    @inline(__always) func run(_ from: Int, _ member: (Int) -> Bool) -> Int {
        var i = from
        while member(i) { i += 1 }
        return i
    }
    switch rule {
    case .eachNumber:
        return fl(pos) & CodepointClass.number != 0 ? pos + 1 : nil
    case .numberRun:
        let e = run(pos) { fl($0) & CodepointClass.number != 0 }
        return e > pos ? e : nil
    case .asciiDigitTriples:
        for k in 0..<3 {
            let c = cp(pos + k)
            if c < 0x30 || c > 0x39 { return nil }
        }
        return pos + 3
    case .punctuationRun(let extra):
        let e = run(pos) { i in
            let c = cp(i)
            if c == outOfRange { return false }
            return fl(i) & CodepointClass.punctuation != 0 || (c < 0x80 && extra.contains(UInt8(c)))
        }
        return e > pos ? e : nil
    case .lineBreak:
        let c = cp(pos)
        return (c == 0x0D || c == 0x0A) ? pos + 1 : nil
    case .optionalSpaceThenRun(let cls):
        func member(_ i: Int) -> Bool {
            let f = fl(i)
            return f & inRange != 0 && cls.contains(view(i), f)
        }
        if fl(pos) & CodepointClass.whitespace != 0 && member(pos + 1) { return run(pos + 1, member) }
        let e = run(pos, member)
        return e > pos ? e : nil
    case .run(let cls):
        let e = run(pos) { i in
            let f = fl(i)
            return f & inRange != 0 && cls.contains(view(i), f)
        }
        return e > pos ? e : nil
    case .bloom:
        func member(_ i: Int) -> Bool {
            let f = fl(i)
            if f & inRange == 0 || f & CodepointClass.whitespace != 0 { return false }
            switch view(i) {
            case 0x28, 0x29, 0x7C, 0x2E, 0x2C, 0x21, 0x3F, 0x2026, 0x3002, 0xFF0C, 0x3001, 0x0964, 0x06D4, 0x060C:
                return false
            default:
                return true
            }
        }
        if cp(pos) == 0x20 && member(pos + 1) { return run(pos + 1, member) }
        let e = run(pos, member)
        return e > pos ? e : nil
    default:
        return nil
    }
}

/// `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)` as llama.cpp runs it.
@inline(__always)
private func splitGPT2(
    _ cp: (Int) -> UInt32, _ fl: (Int) -> UInt8, _ start: Int, _ end: Int, _ out: inout [Int]
) {
    var pos = start
    var prevEnd = start
    @inline(__always) func add(_ e: Int) {
        if e > prevEnd { out.append(e - prevEnd) }
        prevEnd = e
    }
    while pos < end {
        let c = cp(pos)
        let f = fl(pos)
        if c == 0x27 && pos + 1 < end {  // contractions, lowercase only
            let n1 = cp(pos + 1)
            if n1 == 0x73 || n1 == 0x74 || n1 == 0x6D || n1 == 0x64 {
                pos += 2; add(pos); continue
            }
            if pos + 2 < end {
                let n2 = cp(pos + 2)
                if (n1 == 0x72 && n2 == 0x65) || (n1 == 0x76 && n2 == 0x65) || (n1 == 0x6C && n2 == 0x6C) {
                    pos += 3; add(pos); continue
                }
            }
        }
        let f2 = c == 0x20 ? fl(pos + 1) : f
        if f2 & CodepointClass.letter != 0 {
            if c == 0x20 { pos += 1 }
            while fl(pos) & CodepointClass.letter != 0 { pos += 1 }
            add(pos); continue
        }
        if f2 & CodepointClass.number != 0 {
            if c == 0x20 { pos += 1 }
            while fl(pos) & CodepointClass.number != 0 { pos += 1 }
            add(pos); continue
        }
        if f2 & lwn == 0 && f2 & inRange != 0 {
            if c == 0x20 { pos += 1 }
            while case let g = fl(pos), g & lwn == 0 && g & inRange != 0 { pos += 1 }
            add(pos); continue
        }
        var nWS = 0
        while fl(pos + nWS) & CodepointClass.whitespace != 0 { nWS += 1 }
        if nWS > 1 && cp(pos + nWS) != outOfRange {  // \s+(?!\S)
            pos += nWS - 1; add(pos); continue
        }
        if nWS > 0 {
            pos += nWS; add(pos); continue
        }
        pos += 1
        add(pos)
    }
}

/// The LLAMA3 regex (digitGroup 3), Qwen2 (digitGroup 1) and Qwen3.5 (marks join letter runs), as
/// llama.cpp runs them: `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
/// ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`.
@inline(__always)
private func splitLlama3(
    _ cp: (Int) -> UInt32, _ fl: (Int) -> UInt8, _ start: Int, _ end: Int, digitGroup: Int, marks: Bool,
    _ out: inout [Int]
) {
    let wordFlags = marks ? CodepointClass.letter | CodepointClass.mark : CodepointClass.letter
    let notPunct = marks ? lwn | CodepointClass.mark : lwn
    var pos = start
    var prevEnd = start
    @inline(__always) func add(_ e: Int) {
        if e > prevEnd { out.append(e - prevEnd) }
        prevEnd = e
    }
    while pos < end {
        let c = cp(pos)
        let f = fl(pos)
        if c == 0x27 && pos + 1 < end {  // contractions, any case
            let n1 = asciiLower(cp(pos + 1))
            if n1 == 0x73 || n1 == 0x74 || n1 == 0x6D || n1 == 0x64 {
                pos += 2; add(pos); continue
            }
            if pos + 2 < end {
                let n2 = asciiLower(cp(pos + 2))
                if (n1 == 0x72 && n2 == 0x65) || (n1 == 0x76 && n2 == 0x65) || (n1 == 0x6C && n2 == 0x6C) {
                    pos += 3; add(pos); continue
                }
            }
        }
        // [^\r\n\p{L}\p{N}]?\p{L}+
        if !(c == 0x0D || c == 0x0A || f & CodepointClass.number != 0) {
            if f & wordFlags != 0 || fl(pos + 1) & wordFlags != 0 {
                pos += 1
                while fl(pos) & wordFlags != 0 { pos += 1 }
                add(pos); continue
            }
        }
        // \p{N}{1,3} (or \p{N})
        if f & CodepointClass.number != 0 {
            var groupStart = pos
            while fl(pos) & CodepointClass.number != 0 {
                pos += 1
                if pos - groupStart >= digitGroup {
                    add(pos)
                    groupStart = pos
                }
            }
            add(pos); continue
        }
        // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
        let f2 = c == 0x20 ? fl(pos + 1) : f
        if f2 & notPunct == 0 && f & inRange != 0 {
            if c == 0x20 { pos += 1 }
            while case let g = fl(pos), g & notPunct == 0 && g & inRange != 0 { pos += 1 }
            while case let c2 = cp(pos), c2 == 0x0D || c2 == 0x0A { pos += 1 }
            add(pos); continue
        }
        var nWS = 0
        var lastLineBreakEnd = 0
        while fl(pos + nWS) & CodepointClass.whitespace != 0 {
            let c2 = cp(pos + nWS)
            if c2 == 0x0D || c2 == 0x0A { lastLineBreakEnd = pos + nWS + 1 }
            nWS += 1
        }
        if lastLineBreakEnd > 0 {  // \s*[\r\n]+
            pos = lastLineBreakEnd; add(pos); continue
        }
        if nWS > 1 && cp(pos + nWS) != outOfRange {  // \s+(?!\S)
            pos += nWS - 1; add(pos); continue
        }
        if nWS > 0 {  // \s+
            pos += nWS; add(pos); continue
        }
        pos += 1
        add(pos)
    }
}
