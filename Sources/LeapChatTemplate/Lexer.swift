// The template lexer: jinja2's `Lexer.tokeniter` with trim_blocks=True and lstrip_blocks=True.
import LeapCore

enum TokenKind: Equatable {
    case data(String)
    case variableBegin, variableEnd, blockBegin, blockEnd
    case name(String)
    case string(String)
    case integer(Int)
    case float(Double)
    case op(String)
    case eof
}

struct Token {
    var kind: TokenKind
    var offset: Int  // scalar offset in the normalized source, for line:column
}

/// Maps scalar offsets back to 1-based line and column for error messages.
struct SourceMap {
    private var lineStarts: [Int] = [0]
    init(_ scalars: [Unicode.Scalar]) {
        for (i, c) in scalars.enumerated() where c == "\n" { lineStarts.append(i + 1) }
    }
    func location(_ offset: Int) -> (line: Int, column: Int) {
        var lo = 0, hi = lineStarts.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if lineStarts[mid] <= offset { lo = mid } else { hi = mid - 1 }
        }
        return (lo + 1, offset - lineStarts[lo] + 1)
    }
    func error(_ offset: Int, _ message: String) -> LeapError {
        let (l, c) = location(offset)
        return LeapError(.format, "template line \(l), column \(c): \(message)")
    }
}

struct Lexer {
    let src: [Unicode.Scalar]
    let map: SourceMap
    var pos = 0
    var tokens: [Token] = []
    var lineStarting = true

    /// Normalizes newlines like jinja2 (\r\n and \r become \n; one trailing newline is dropped).
    static func normalize(_ source: String) -> [Unicode.Scalar] {
        var out: [Unicode.Scalar] = []
        out.reserveCapacity(source.unicodeScalars.count)
        var prevCR = false
        for c in source.unicodeScalars {
            if c == "\r" {
                out.append("\n")
                prevCR = true
                continue
            }
            if c == "\n" && prevCR { prevCR = false; continue }
            prevCR = false
            out.append(c)
        }
        if out.last == "\n" { out.removeLast() }
        return out
    }

    init(_ scalars: [Unicode.Scalar]) {
        src = scalars
        map = SourceMap(scalars)
    }

    static func tokenize(_ scalars: [Unicode.Scalar]) throws -> (tokens: [Token], map: SourceMap) {
        var lx = Lexer(scalars)
        try lx.run()
        return (lx.tokens, lx.map)
    }

    private func at(_ i: Int) -> Unicode.Scalar? { i >= 0 && i < src.count ? src[i] : nil }

    private func matches(_ s: StaticString, at i: Int) -> Bool {
        var j = i
        var found = true
        s.withUTF8Buffer { bytes in
            for b in bytes {
                guard j < src.count, src[j].value == UInt32(b) else { found = false; return }
                j += 1
            }
        }
        return found
    }

    private func string(_ a: Int, _ b: Int) -> String {
        var s = String.UnicodeScalarView()
        s.append(contentsOf: src[a..<b])
        return String(s)
    }

    private mutating func emitData(_ a: Int, _ b: Int) {
        if b > a { tokens.append(Token(kind: .data(string(a, b)), offset: a)) }
    }

    private enum TagKind { case variable, block, comment, raw }

    /// Text before a tag, with `-` (strip all whitespace) or lstrip_blocks applied. Returns the end offset.
    private func strippedEnd(textStart a: Int, textEnd b: Int, sign: Unicode.Scalar?, kind: TagKind) -> Int {
        if sign == "-" {
            var e = b
            while e > a, pyIsSpace(src[e - 1]) { e -= 1 }
            return e
        }
        if sign != "+" && kind != .variable {
            var lpos = b
            while lpos > a, src[lpos - 1] != "\n" { lpos -= 1 }
            let afterNewline = lpos > a
            if afterNewline || lineStarting {
                if lpos < b && src[lpos..<b].allSatisfy(pyIsSpace) { return lpos }
            }
        }
        return b
    }

    /// `{%(-|+|)\s*raw\s*(-%}\s*|%})` at i: the end offset of the raw-begin tag, if it is one.
    private func rawBegin(at i: Int) -> Int? {
        guard matches("{%", at: i) else { return nil }
        var j = i + 2
        if at(j) == "-" || at(j) == "+" { j += 1 }
        while let c = at(j), pyIsSpace(c) { j += 1 }
        guard matches("raw", at: j) else { return nil }
        j += 3
        while let c = at(j), pyIsSpace(c) { j += 1 }
        if matches("-%}", at: j) {
            j += 3
            while let c = at(j), pyIsSpace(c) { j += 1 }
            return j
        }
        if matches("%}", at: j) { return j + 2 }
        return nil
    }

    private mutating func run() throws {
        while pos < src.count {
            // Find the next tag opening.
            var i = pos
            var found: (start: Int, kind: TagKind)? = nil
            while i + 1 < src.count {
                if src[i] == "{" {
                    let n = src[i + 1]
                    if n == "{" { found = (i, .variable); break }
                    if n == "%" { found = (i, rawBegin(at: i) != nil ? .raw : .block); break }
                    if n == "#" { found = (i, .comment); break }
                }
                i += 1
            }
            guard let (start, kind) = found else {
                emitData(pos, src.count)
                pos = src.count
                break
            }
            let signChar = at(start + 2)
            let sign: Unicode.Scalar? = (signChar == "-" || signChar == "+") ? signChar : nil
            let textEnd = strippedEnd(textStart: pos, textEnd: start, sign: sign, kind: kind)
            emitData(pos, textEnd)
            switch kind {
            case .variable:
                tokens.append(Token(kind: .variableBegin, offset: start))
                pos = start + 2 + (sign == nil ? 0 : 1)
                lineStarting = false
                try lexTag(block: false)
            case .block:
                tokens.append(Token(kind: .blockBegin, offset: start))
                pos = start + 2 + (sign == nil ? 0 : 1)
                lineStarting = false
                try lexTag(block: true)
            case .comment:
                pos = start + 2 + (sign == nil ? 0 : 1)
                try skipComment(start)
            case .raw:
                guard let after = rawBegin(at: start) else { throw map.error(start, "bad raw tag") }
                lineStarting = after > 0 && src[after - 1] == "\n"
                pos = after
                try lexRaw(start)
            }
        }
        tokens.append(Token(kind: .eof, offset: src.count))
    }

    /// After the close of a block or comment: `+` keeps, `-` strips all whitespace, otherwise trim_blocks
    /// removes one newline.
    private mutating func closeTrailing(_ j: Int, sign: Unicode.Scalar?, trim: Bool) {
        var k = j
        if sign == "-" {
            while k < src.count, pyIsSpace(src[k]) { k += 1 }
        } else if sign == nil && trim && at(k) == "\n" {
            k += 1
        }
        lineStarting = k > 0 && src[k - 1] == "\n"
        pos = k
    }

    private mutating func skipComment(_ start: Int) throws {
        var q = pos
        while q + 1 < src.count {
            if src[q] == "#" && src[q + 1] == "}" {
                var sign: Unicode.Scalar? = nil
                if q - 1 >= pos, src[q - 1] == "-" || src[q - 1] == "+" { sign = src[q - 1] }
                closeTrailing(q + 2, sign: sign, trim: true)
                return
            }
            q += 1
        }
        throw map.error(start, "missing end of comment tag '#}'")
    }

    private mutating func lexRaw(_ start: Int) throws {
        var q = pos
        while q + 1 < src.count {
            if src[q] == "{" && src[q + 1] == "%" {
                var j = q + 2
                var sign: Unicode.Scalar? = nil
                if at(j) == "-" || at(j) == "+" { sign = at(j); j += 1 }
                while let c = at(j), pyIsSpace(c) { j += 1 }
                if matches("endraw", at: j) {
                    j += 6
                    while let c = at(j), pyIsSpace(c) { j += 1 }
                    var closeSign: Unicode.Scalar? = nil
                    if at(j) == "-" || at(j) == "+" { closeSign = at(j); j += 1 }
                    if matches("%}", at: j) {
                        let textEnd = strippedEnd(textStart: pos, textEnd: q, sign: sign, kind: .block)
                        emitData(pos, textEnd)
                        closeTrailing(j + 2, sign: closeSign, trim: true)
                        return
                    }
                }
            }
            q += 1
        }
        throw map.error(start, "missing end of raw directive '{% endraw %}'")
    }

    /// Tokens inside `{{ ... }}` or `{% ... %}` up to the closing tag.
    private mutating func lexTag(block: Bool) throws {
        let tagStart = pos
        var balance: [Unicode.Scalar] = []
        var closeOffset = pos
        while true {
            closeOffset = pos
            guard pos < src.count else {
                throw map.error(tagStart, "unexpected end of template, expected '\(block ? "%}" : "}}")'")
            }
            if balance.isEmpty {
                if block {
                    if matches("+%}", at: pos) { closeTrailing(pos + 3, sign: "+", trim: true); break }
                    if matches("-%}", at: pos) { closeTrailing(pos + 3, sign: "-", trim: true); break }
                    if matches("%}", at: pos) { closeTrailing(pos + 2, sign: nil, trim: true); break }
                } else {
                    if matches("-}}", at: pos) { closeTrailing(pos + 3, sign: "-", trim: false); break }
                    if matches("}}", at: pos) { closeTrailing(pos + 2, sign: nil, trim: false); break }
                }
            }
            let c = src[pos]
            if pyIsSpace(c) { pos += 1; continue }
            let start = pos
            if isDigit(c) {
                tokens.append(Token(kind: try lexNumber(), offset: start))
                continue
            }
            if isNameStart(c) {
                while let d = at(pos), isNameStart(d) || isDigit(d) { pos += 1 }
                tokens.append(Token(kind: .name(string(start, pos)), offset: start))
                continue
            }
            if c == "'" || c == "\"" {
                tokens.append(Token(kind: .string(try lexString()), offset: start))
                continue
            }
            if let n = at(pos + 1), let op = Lexer.twoCharOperator(c, n) {
                tokens.append(Token(kind: .op(op), offset: start))
                pos += 2
                continue
            }
            guard Lexer.singleCharOperators.contains(c) else {
                throw map.error(start, "unexpected character \(pyStringRepr(String(c))) in tag")
            }
            switch c {
            case "(", "[", "{": balance.append(c)
            case ")", "]", "}":
                let open: Unicode.Scalar = c == ")" ? "(" : (c == "]" ? "[" : "{")
                guard balance.last == open else {
                    throw map.error(start, "unexpected '\(c)'")
                }
                balance.removeLast()
            default: break
            }
            tokens.append(Token(kind: .op(String(c)), offset: start))
            pos += 1
        }
        tokens.append(Token(kind: block ? .blockEnd : .variableEnd, offset: closeOffset))
    }

    static let singleCharOperators = Set("+-/*%~[](){}><=.:|,;".unicodeScalars)

    static func twoCharOperator(_ a: Unicode.Scalar, _ b: Unicode.Scalar) -> String? {
        switch (a, b) {
        case ("*", "*"): return "**"
        case ("/", "/"): return "//"
        case ("=", "="): return "=="
        case ("!", "="): return "!="
        case (">", "="): return ">="
        case ("<", "="): return "<="
        default: return nil
        }
    }

    private func isDigit(_ c: Unicode.Scalar) -> Bool { c.value >= 48 && c.value <= 57 }
    private func isNameStart(_ c: Unicode.Scalar) -> Bool {
        (c.value >= 65 && c.value <= 90) || (c.value >= 97 && c.value <= 122) || c == "_"
            || (c.value > 127 && (c.properties.isXIDContinue))
    }

    /// Digits with `_` separators starting at pos; returns the digits without separators.
    private mutating func digitRun() -> String {
        var s = ""
        while let c = at(pos) {
            if isDigit(c) { s.unicodeScalars.append(c); pos += 1 }
            else if c == "_", let n = at(pos + 1), isDigit(n), !s.isEmpty { pos += 1 }
            else { break }
        }
        return s
    }

    private mutating func lexNumber() throws -> TokenKind {
        let start = pos
        // 0b / 0o / 0x integers.
        if src[pos] == "0", let p = at(pos + 1), "bBoOxX".unicodeScalars.contains(p) {
            let radix = (p == "b" || p == "B") ? 2 : ((p == "o" || p == "O") ? 8 : 16)
            var j = pos + 2
            var digits = ""
            while let c = at(j), c == "_" || c.properties.isASCIIHexDigit {
                if c != "_" { digits.unicodeScalars.append(c) }
                j += 1
            }
            if let v = Int(digits, radix: radix) {
                pos = j
                return .integer(v)
            }
        }
        let afterDot = start > 0 && src[start - 1] == "."
        var text = digitRun()
        var isFloat = false
        if !afterDot {
            if at(pos) == ".", let n = at(pos + 1), isDigit(n) {
                pos += 1
                text += "." + digitRun()
                isFloat = true
            }
            if let e = at(pos), e == "e" || e == "E" {
                var j = pos + 1
                if at(j) == "+" || at(j) == "-" { j += 1 }
                if let d = at(j), isDigit(d) {
                    let sign = at(pos + 1) == "-" ? "-" : ""
                    pos = j
                    text += "e" + sign + digitRun()
                    isFloat = true
                }
            }
        }
        if isFloat {
            guard let d = Double(text) else { throw map.error(start, "invalid number '\(text)'") }
            return .float(d)
        }
        guard let v = Int(text) else { throw map.error(start, "integer literal '\(text)' is too large") }
        return .integer(v)
    }

    /// A quoted string with Python's unicode-escape rules.
    private mutating func lexString() throws -> String {
        let start = pos
        let quote = src[pos]
        pos += 1
        var out = String.UnicodeScalarView()
        while true {
            guard let c = at(pos) else { throw map.error(start, "unterminated string literal") }
            pos += 1
            if c == quote { break }
            if c != "\\" { out.append(c); continue }
            guard let e = at(pos) else { throw map.error(start, "unterminated string literal") }
            pos += 1
            switch e {
            case "\n": break
            case "\\": out.append("\\")
            case "'": out.append("'")
            case "\"": out.append("\"")
            case "a": out.append("\u{07}")
            case "b": out.append("\u{08}")
            case "f": out.append("\u{0C}")
            case "n": out.append("\n")
            case "r": out.append("\r")
            case "t": out.append("\t")
            case "v": out.append("\u{0B}")
            case "0"..."7":
                var v = e.value - 48
                for _ in 0..<2 {
                    guard let d = at(pos), d.value >= 48 && d.value <= 55 else { break }
                    v = v * 8 + d.value - 48
                    pos += 1
                }
                guard let s = Unicode.Scalar(v) else { throw map.error(pos, "invalid octal escape") }
                out.append(s)
            case "x", "u", "U":
                let n = e == "x" ? 2 : (e == "u" ? 4 : 8)
                var v: UInt32 = 0
                for _ in 0..<n {
                    guard let d = at(pos), d.properties.isASCIIHexDigit, let h = UInt32(String(d), radix: 16) else {
                        throw map.error(pos, "truncated \\\(e) escape in string literal")
                    }
                    v = v * 16 + h
                    pos += 1
                }
                guard let s = Unicode.Scalar(v) else {
                    throw map.error(pos, "escape \\\(e) is not a valid Unicode character")
                }
                out.append(s)
            case "N":
                throw map.error(pos, "\\N{...} escapes are not supported")
            default:
                out.append("\\")
                out.append(e)
            }
        }
        return String(out)
    }
}
