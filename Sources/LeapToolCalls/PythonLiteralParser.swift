import LeapCore
import LeapJSON
import LeapMessages

/// A hand-written parser for the text models write between tool-call markers.
///
/// It reads Python literal syntax (the subset `ast.literal_eval` accepts that maps onto JSON) and the
/// JSON spellings models also use, over the UTF-8 bytes of the body:
///
///     calls   := '[' ']' | '[' call (',' call)* ','? ']' | call (',' call)*       (Pythonic)
///              | '[' object (',' object)* ','? ']' | object (','? object)*          (JSON calls)
///     call    := name '(' (kwarg (',' kwarg)* ','?)? ')'       kwarg := identifier '=' value
///     value   := string | number | True | False | None | true | false | null
///              | '[' values ']' | '(' values ')' | '{' (string ':' value (',' ...)*)? '}'
///
/// Strings take single, double or triple quotes, optional `r`/`u` prefixes and Python's escapes
/// (`\n \t \\ \' \" \a \b \f \v \r \0oo \xhh \uXXXX \UXXXXXXXX`, line continuation); two leniencies
/// for model output: raw newlines are allowed inside any string, and JSON's `\/` means `/`. `\u`
/// surrogate pairs are combined (JSON style); a lone surrogate is an error (it has no UTF-8 form).
/// Numbers: optional sign, decimal (underscores allowed, leading zeros tolerated), `0x`/`0o`/`0b`,
/// floats with fraction and/or exponent; integers beyond Int64 become doubles. Tuples become arrays;
/// dict keys must be strings; a repeated key keeps its first position and last value (Python's dict).
/// Whitespace (incl. newlines) is allowed between all tokens. Nesting is capped at `maxDepth`.
///
/// Errors are `LeapError(.functionCallParsing, "... at offset N: expected X, found Y in: <text>")`
/// where N is a byte offset into the body.
struct PythonLiteralParser {
    static let maxDepth = 128

    private let bytes: [UInt8]
    private var pos = 0
    private var depth = 0

    init(_ text: String) { bytes = Array(text.utf8) }

    // MARK: - Entry points

    /// Parses a whole tool-call body in either the Pythonic or the JSON form. An empty body gives [].
    static func parseCalls(_ body: String) throws -> [LeapFunctionCall] {
        var p = PythonLiteralParser(body)
        p.skipWhitespace()
        var calls: [LeapFunctionCall] = []
        switch p.peek() {
        case nil:
            return []
        case UInt8(ascii: "["):
            let save = p.pos
            p.pos += 1
            p.skipWhitespace()
            let isJSON = p.peek() == UInt8(ascii: "{")
            p.pos = save
            calls = isJSON ? try p.parseJSONCallList() : try p.parsePythonicCallList()
        case UInt8(ascii: "{"):
            // One object, or several separated by commas or whitespace (no list brackets).
            while true {
                calls.append(try p.parseJSONCall())
                p.skipWhitespace()
                if p.peek() == UInt8(ascii: ",") { p.pos += 1; p.skipWhitespace() }
                guard p.peek() == UInt8(ascii: "{") else { break }
            }
        default:
            // Bare calls without list brackets: `f(a=1)` or `f(), g()`.
            while true {
                calls.append(try p.parseCall())
                p.skipWhitespace()
                guard p.peek() == UInt8(ascii: ",") else { break }
                p.pos += 1
                p.skipWhitespace()
            }
        }
        p.skipWhitespace()
        if p.pos < p.bytes.count { throw p.error("expected the end of the function calls", found: p.describeCurrent()) }
        return calls
    }

    /// Parses a Hermes body: one JSON object `{"name": ..., "arguments": ...}` (a list of such objects
    /// is tolerated).
    static func parseJSONCalls(_ body: String) throws -> [LeapFunctionCall] {
        var p = PythonLiteralParser(body)
        p.skipWhitespace()
        var calls: [LeapFunctionCall]
        switch p.peek() {
        case nil: return []
        case UInt8(ascii: "["): calls = try p.parseJSONCallList()
        case UInt8(ascii: "{"): calls = [try p.parseJSONCall()]
        default: throw p.error("expected a JSON object {\"name\": ..., \"arguments\": {...}}", found: p.describeCurrent())
        }
        p.skipWhitespace()
        if p.pos < p.bytes.count { throw p.error("expected the end of the function call", found: p.describeCurrent()) }
        return calls
    }

    /// Parses exactly one literal value (surrounded by optional whitespace).
    static func parseValue(_ text: String) throws -> JSONValue {
        var p = PythonLiteralParser(text)
        p.skipWhitespace()
        let v = try p.parseValue()
        p.skipWhitespace()
        if p.pos < p.bytes.count { throw p.error("expected the end of the value", found: p.describeCurrent()) }
        return v
    }

    // MARK: - Calls

    private mutating func parsePythonicCallList() throws -> [LeapFunctionCall] {
        pos += 1  // [
        var calls: [LeapFunctionCall] = []
        while true {
            skipWhitespace()
            if peek() == UInt8(ascii: "]") { pos += 1; return calls }
            calls.append(try parseCall())
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): pos += 1
            case UInt8(ascii: "]"): pos += 1; return calls
            default: throw error("expected ',' or ']' after a function call", found: describeCurrent())
            }
        }
    }

    private mutating func parseCall() throws -> LeapFunctionCall {
        guard let c = peek(), isNameStart(c) else { throw error("expected a function name", found: describeCurrent()) }
        let nameStart = pos
        while let c = peek(), isNameContinue(c) || c == UInt8(ascii: ".") || c == UInt8(ascii: "-") { pos += 1 }
        let name = String(decoding: bytes[nameStart..<pos], as: UTF8.self)
        skipWhitespace()
        guard peek() == UInt8(ascii: "(") else { throw error("expected '(' after the function name '\(name)'", found: describeCurrent()) }
        pos += 1
        var args = JSONObject()
        while true {
            skipWhitespace()
            if peek() == UInt8(ascii: ")") { pos += 1; break }
            guard let c = peek(), isNameStart(c) else {
                throw error("expected a keyword argument (name=value) in the call of '\(name)'", found: describeCurrent())
            }
            let keyStart = pos
            while let c = peek(), isNameContinue(c) { pos += 1 }
            let key = String(decoding: bytes[keyStart..<pos], as: UTF8.self)
            skipWhitespace()
            guard peek() == UInt8(ascii: "=") else {
                throw error("expected '=' after the argument name '\(key)' in the call of '\(name)'", found: describeCurrent())
            }
            pos += 1
            skipWhitespace()
            if args[key] != nil {
                pos = keyStart
                throw error("a keyword argument that is not repeated in the call of '\(name)'", found: "'\(key)' a second time")
            }
            args.set(key, try parseValue())
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): pos += 1
            case UInt8(ascii: ")"): pos += 1; return LeapFunctionCall(name: name, arguments: args)
            default: throw error("expected ',' or ')' in the call of '\(name)'", found: describeCurrent())
            }
        }
        return LeapFunctionCall(name: name, arguments: args)
    }

    private mutating func parseJSONCallList() throws -> [LeapFunctionCall] {
        pos += 1  // [
        var calls: [LeapFunctionCall] = []
        while true {
            skipWhitespace()
            if peek() == UInt8(ascii: "]") { pos += 1; return calls }
            calls.append(try parseJSONCall())
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): pos += 1
            case UInt8(ascii: "]"): pos += 1; return calls
            default: throw error("expected ',' or ']' after a function call object", found: describeCurrent())
            }
        }
    }

    /// `{"name": "f", "arguments": {...} | "<JSON text>" | null}`; "parameters" is accepted for
    /// "arguments", and the OpenAI wrapper `{"type": "function", "function": {...}}` is unwrapped.
    private mutating func parseJSONCall() throws -> LeapFunctionCall {
        let start = pos
        guard peek() == UInt8(ascii: "{") else { throw error("expected a function call object '{'", found: describeCurrent()) }
        let value = try parseValue()
        guard case .object(var o) = value else { throw error("expected a function call object", found: value.typeName) }
        if case .object(let inner)? = o["function"], o["name"] == nil { o = inner }
        func fail(_ what: String, _ found: String) -> LeapError { error(what, found: found, at: start) }
        guard let nameValue = o["name"] else { throw fail("a \"name\" field in the function call object", "no \"name\"") }
        guard case .string(let name) = nameValue, !name.isEmpty else {
            throw fail("\"name\" to be a non-empty string", nameValue.serialized())
        }
        var args = JSONObject()
        switch o["arguments"] ?? o["parameters"] {
        case nil, .some(.null): break
        case .some(.object(let a)): args = a
        case .some(.string(let s)):
            let parsed: JSONValue
            do { parsed = try PythonLiteralParser.parseValue(s) } catch let e as LeapError {
                throw fail("\"arguments\" of '\(name)' to hold a JSON object (\(e.message))", "a string that does not parse")
            }
            guard case .object(let a) = parsed else { throw fail("\"arguments\" of '\(name)' to hold an object", parsed.typeName) }
            args = a
        case .some(let other):
            throw fail("\"arguments\" of '\(name)' to be an object", other.typeName)
        }
        return LeapFunctionCall(name: name, arguments: args)
    }

    // MARK: - Values

    private mutating func enter() throws {
        depth += 1
        if depth > PythonLiteralParser.maxDepth {
            throw error("at most \(PythonLiteralParser.maxDepth) levels of nesting", found: "deeper nesting")
        }
    }

    private mutating func parseValue() throws -> JSONValue {
        guard let c = peek() else { throw error("expected a value", found: "end of input") }
        switch c {
        case UInt8(ascii: "\""), UInt8(ascii: "'"): return .string(try parseString(raw: false))
        case UInt8(ascii: "["): return .array(try parseSequence(close: UInt8(ascii: "]"), isTuple: false))
        case UInt8(ascii: "("):
            let (items, single) = try parseTuple()
            return single ?? .array(items)
        case UInt8(ascii: "{"): return try parseDict()
        case UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try parseNumber()
        default:
            guard isNameStart(c) else { throw error("expected a value", found: describeCurrent()) }
            let start = pos
            while let c = peek(), isNameContinue(c) { pos += 1 }
            let word = String(decoding: bytes[start..<pos], as: UTF8.self)
            // String prefixes: r'..' (raw), u'..' (no-op).
            if let q = peek(), q == UInt8(ascii: "\"") || q == UInt8(ascii: "'") {
                switch word {
                case "r", "R": return .string(try parseString(raw: true))
                case "u", "U": return .string(try parseString(raw: false))
                default: break
                }
            }
            switch word {
            case "True", "true": return .bool(true)
            case "False", "false": return .bool(false)
            case "None", "null": return .null
            default:
                pos = start
                throw error("expected a value (string, number, True/False/None, list, tuple or dict)", found: "'\(word)'")
            }
        }
    }

    private mutating func parseSequence(close: UInt8, isTuple: Bool) throws -> [JSONValue] {
        try enter()
        defer { depth -= 1 }
        pos += 1
        var items: [JSONValue] = []
        while true {
            skipWhitespace()
            if peek() == close { pos += 1; return items }
            items.append(try parseValue())
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): pos += 1
            case close: pos += 1; return items
            default:
                throw error("expected ',' or '\(Character(Unicode.Scalar(close)))' in a \(isTuple ? "tuple" : "list")", found: describeCurrent())
            }
        }
    }

    /// `(x)` is just `x` in Python; `(x,)` and `(x, y)` are tuples.
    private mutating func parseTuple() throws -> ([JSONValue], JSONValue?) {
        try enter()
        defer { depth -= 1 }
        pos += 1
        var items: [JSONValue] = []
        var sawComma = false
        while true {
            skipWhitespace()
            if peek() == UInt8(ascii: ")") { pos += 1; break }
            items.append(try parseValue())
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): pos += 1; sawComma = true
            case UInt8(ascii: ")"): pos += 1; return (items, items.count == 1 && !sawComma ? items[0] : nil)
            default: throw error("expected ',' or ')' in a tuple", found: describeCurrent())
            }
        }
        return (items, nil)
    }

    private mutating func parseDict() throws -> JSONValue {
        try enter()
        defer { depth -= 1 }
        pos += 1  // {
        var obj = JSONObject()
        while true {
            skipWhitespace()
            if peek() == UInt8(ascii: "}") { pos += 1; return .object(obj) }
            let key: String
            switch peek() {
            case UInt8(ascii: "\""), UInt8(ascii: "'"): key = try parseString(raw: false)
            default: throw error("expected a string key in a dict", found: describeCurrent())
            }
            skipWhitespace()
            guard peek() == UInt8(ascii: ":") else { throw error("expected ':' after the dict key \"\(key)\"", found: describeCurrent()) }
            pos += 1
            skipWhitespace()
            let v = try parseValue()
            obj.set(key, v)  // a repeated key keeps its position and takes the last value, as in Python
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): pos += 1
            case UInt8(ascii: "}"): pos += 1; return .object(obj)
            default: throw error("expected ',' or '}' in a dict", found: describeCurrent())
            }
        }
    }

    private mutating func parseNumber() throws -> JSONValue {
        let start = pos
        var negative = false
        if peek() == UInt8(ascii: "-") || peek() == UInt8(ascii: "+") {
            negative = peek() == UInt8(ascii: "-")
            pos += 1
            skipWhitespace()  // Python allows "- 1"
        }
        // Prefixed integers.
        if peek() == UInt8(ascii: "0"), pos + 1 < bytes.count {
            let radix: Int64?
            switch bytes[pos + 1] | 0x20 {
            case UInt8(ascii: "x"): radix = 16
            case UInt8(ascii: "o"): radix = 8
            case UInt8(ascii: "b"): radix = 2
            default: radix = nil
            }
            if let radix {
                pos += 2
                var value: Int64 = 0
                var digits = 0
                while let c = peek() {
                    if c == UInt8(ascii: "_") { pos += 1; continue }
                    guard let d = digitValue(c), d < radix else { break }
                    let (m, o1) = value.multipliedReportingOverflow(by: radix)
                    let (s, o2) = m.addingReportingOverflow(d)
                    if o1 || o2 {
                        pos = start
                        throw error("an integer that fits in 64 bits", found: "a larger integer")
                    }
                    value = s
                    digits += 1
                    pos += 1
                }
                if digits == 0 { throw error("expected digits after the base prefix", found: describeCurrent()) }
                try checkNumberEnd()
                return .int(negative ? -value : value)
            }
        }
        var text = negative ? "-" : ""
        var isInteger = true
        var intDigits = 0
        while let c = peek(), isDigit(c) || c == UInt8(ascii: "_") {
            if c != UInt8(ascii: "_") { text.append(Character(Unicode.Scalar(c))); intDigits += 1 }
            pos += 1
        }
        var fracDigits = 0
        if intDigits == 0 { text.append("0") }  // ".5" -> "0.5"
        if peek() == UInt8(ascii: ".") {
            isInteger = false
            pos += 1
            text.append(".")
            while let c = peek(), isDigit(c) || c == UInt8(ascii: "_") {
                if c != UInt8(ascii: "_") { text.append(Character(Unicode.Scalar(c))); fracDigits += 1 }
                pos += 1
            }
            if fracDigits == 0 { text.append("0") }
        }
        if intDigits == 0 && fracDigits == 0 { throw error("expected a number", found: describeCurrent()) }
        if let e = peek(), e | 0x20 == UInt8(ascii: "e") {
            isInteger = false
            pos += 1
            text.append("e")
            if let s = peek(), s == UInt8(ascii: "+") || s == UInt8(ascii: "-") {
                text.append(Character(Unicode.Scalar(s)))
                pos += 1
            }
            var expDigits = 0
            while let c = peek(), isDigit(c) || c == UInt8(ascii: "_") {
                if c != UInt8(ascii: "_") { text.append(Character(Unicode.Scalar(c))); expDigits += 1 }
                pos += 1
            }
            if expDigits == 0 { throw error("expected digits in the exponent", found: describeCurrent()) }
        }
        try checkNumberEnd()
        if isInteger, let i = Int64(text) { return .int(i) }
        guard let d = Double(text), d.isFinite else {
            pos = start
            throw error("a finite number", found: "\(text)")
        }
        return .double(d)
    }

    /// `12abc` is not a number followed by something else; say so at the number.
    private mutating func checkNumberEnd() throws {
        if let c = peek(), isNameContinue(c) { throw error("expected a delimiter after the number", found: describeCurrent()) }
    }

    private mutating func parseString(raw: Bool) throws -> String {
        let start = pos
        guard let quote = peek() else { throw error("expected a string", found: "end of input") }
        let triple = pos + 2 < bytes.count && bytes[pos + 1] == quote && bytes[pos + 2] == quote
        pos += triple ? 3 : 1
        var out: [UInt8] = []
        while true {
            guard pos < bytes.count else {
                pos = start
                throw error("a closing \(triple ? "triple " : "")quote", found: "an unterminated string")
            }
            let b = bytes[pos]
            if b == quote {
                if !triple { pos += 1; break }
                if pos + 2 < bytes.count && bytes[pos + 1] == quote && bytes[pos + 2] == quote { pos += 3; break }
                out.append(b)
                pos += 1
                continue
            }
            if b != UInt8(ascii: "\\") {
                out.append(b)
                pos += 1
                continue
            }
            // Escape sequence.
            guard pos + 1 < bytes.count else { pos = start; throw error("a closing quote", found: "an unterminated string") }
            let e = bytes[pos + 1]
            if raw {
                // Raw strings keep the backslash; \<quote> still does not end the string.
                out.append(b)
                out.append(e)
                pos += 2
                continue
            }
            let escapeStart = pos
            pos += 2
            switch e {
            case UInt8(ascii: "\n"): break  // line continuation
            case UInt8(ascii: "\\"), UInt8(ascii: "'"), UInt8(ascii: "\""): out.append(e)
            case UInt8(ascii: "/"): out.append(e)  // JSON's \/ (Python would keep the backslash)
            case UInt8(ascii: "a"): out.append(0x07)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "v"): out.append(0x0B)
            case UInt8(ascii: "0")...UInt8(ascii: "7"):
                var v = UInt32(e - UInt8(ascii: "0"))
                var n = 1
                while n < 3, let c = peek(), c >= UInt8(ascii: "0"), c <= UInt8(ascii: "7") {
                    v = v * 8 + UInt32(c - UInt8(ascii: "0"))
                    pos += 1
                    n += 1
                }
                try appendScalar(v, to: &out, escapeStart: escapeStart)
            case UInt8(ascii: "x"):
                try appendScalar(try parseHex(2, escapeStart: escapeStart), to: &out, escapeStart: escapeStart)
            case UInt8(ascii: "u"), UInt8(ascii: "U"):
                var code = try parseHex(e == UInt8(ascii: "u") ? 4 : 8, escapeStart: escapeStart)
                if code >= 0xD800 && code < 0xDC00 {
                    // A high surrogate must be followed by a \u low surrogate (JSON's way to write astral characters).
                    guard pos + 1 < bytes.count, bytes[pos] == UInt8(ascii: "\\"), bytes[pos + 1] == UInt8(ascii: "u") else {
                        pos = escapeStart
                        throw error("a low surrogate \\u escape after \\u\(hexString(code))", found: "an unpaired surrogate")
                    }
                    pos += 2
                    let low = try parseHex(4, escapeStart: escapeStart)
                    guard low >= 0xDC00 && low < 0xE000 else {
                        pos = escapeStart
                        throw error("a low surrogate \\u escape after \\u\(hexString(code))", found: "\\u\(hexString(low))")
                    }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                }
                try appendScalar(code, to: &out, escapeStart: escapeStart)
            default:
                // Python keeps unknown escapes (e.g. "\d") as written.
                out.append(b)
                out.append(e)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private mutating func parseHex(_ count: Int, escapeStart: Int) throws -> UInt32 {
        var v: UInt32 = 0
        for _ in 0..<count {
            guard let c = peek(), let d = digitValue(c), d < 16 else {
                let found = describeCurrent()
                pos = escapeStart
                throw error("\(count) hex digits in the escape", found: found)
            }
            v = v << 4 | UInt32(d)
            pos += 1
        }
        return v
    }

    private mutating func appendScalar(_ code: UInt32, to out: inout [UInt8], escapeStart: Int) throws {
        guard let scalar = Unicode.Scalar(code) else {
            pos = escapeStart
            throw error("an escape that names a Unicode scalar value", found: code >= 0xD800 && code < 0xE000 ? "a lone surrogate \\u\(hexString(code))" : "code point 0x\(hexString(code))")
        }
        out.append(contentsOf: Array(String(Character(scalar)).utf8))
    }

    // MARK: - Helpers

    private func peek() -> UInt8? { pos < bytes.count ? bytes[pos] : nil }
    private func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }
    /// Identifiers: ASCII letters, underscore and any non-ASCII character (Python allows Unicode names).
    private func isNameStart(_ c: UInt8) -> Bool {
        (c | 0x20 >= UInt8(ascii: "a") && c | 0x20 <= UInt8(ascii: "z")) || c == UInt8(ascii: "_") || c >= 0x80
    }
    private func isNameContinue(_ c: UInt8) -> Bool { isNameStart(c) || isDigit(c) }

    private func digitValue(_ c: UInt8) -> Int64? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return Int64(c - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return Int64(c - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return Int64(c - UInt8(ascii: "A") + 10)
        default: return nil
        }
    }

    private mutating func skipWhitespace() {
        while let c = peek(), c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D { pos += 1 }
    }

    /// "'x'", "end of input", or the whole character at `pos` (never half of a UTF-8 sequence).
    private func describeCurrent() -> String {
        guard pos < bytes.count else { return "end of input" }
        var end = pos + 1
        while end < bytes.count, end < pos + 4, bytes[end] & 0xC0 == 0x80 { end += 1 }
        let ch = String(decoding: bytes[pos..<end], as: UTF8.self)
        switch bytes[pos] {
        case 0x0A: return "a newline"
        case 0x09: return "a tab"
        case 0..<0x20: return "control character 0x\(hexString(UInt32(bytes[pos])))"
        default: return "'\(ch)'"
        }
    }

    private func hexString(_ v: UInt32) -> String {
        let s = String(v, radix: 16, uppercase: false)
        return s.count >= 4 ? s : String(repeating: "0", count: 4 - s.count) + s
    }

    /// The error for the current position, quoting the body (or a window around the offset if it is long).
    private func error(_ expected: String, found: String, at offset: Int? = nil) -> LeapError {
        let at = offset ?? pos
        let what = expected.hasPrefix("expected ") ? expected : "expected " + expected
        return LeapError(.functionCallParsing,
                         "invalid function call at offset \(at): \(what), found \(found) in: \(excerpt(around: at))")
    }

    private func excerpt(around offset: Int) -> String {
        let limit = 240
        if bytes.count <= limit { return String(decoding: bytes, as: UTF8.self) }
        var lo = max(0, offset - limit / 2)
        var hi = min(bytes.count, lo + limit)
        // Never cut a UTF-8 sequence in half.
        while lo > 0, bytes[lo] & 0xC0 == 0x80 { lo -= 1 }
        while hi < bytes.count, bytes[hi] & 0xC0 == 0x80 { hi += 1 }
        return (lo > 0 ? "..." : "") + String(decoding: bytes[lo..<hi], as: UTF8.self) + (hi < bytes.count ? "..." : "")
    }
}
