import LeapCore

/// A strict RFC 8259 parser over UTF-8 bytes.
///
/// Errors say what was expected, what was found and where ("line 3, column 14"). Nesting is limited to
/// `maxDepth` so hostile input cannot exhaust the stack; strings must be valid UTF-8; duplicate object
/// keys are rejected (their meaning would be ambiguous).
package struct JSONParser {
    package static let maxDepth = 512

    private let bytes: [UInt8]
    private var pos = 0
    private var depth = 0

    private init(_ bytes: [UInt8]) { self.bytes = bytes }

    package static func parse(_ text: String) throws -> JSONValue {
        try parse(bytes: Array(text.utf8))
    }

    package static func parse(bytes: [UInt8]) throws -> JSONValue {
        var p = JSONParser(bytes)
        p.skipWhitespace()
        let v = try p.parseValue()
        p.skipWhitespace()
        if p.pos < p.bytes.count { throw p.error("unexpected \(p.describeCurrent()) after the end of the JSON value") }
        return v
    }

    // MARK: - Values

    private mutating func parseValue() throws -> JSONValue {
        guard pos < bytes.count else { throw error("unexpected end of input, expected a value") }
        switch bytes[pos] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectWord("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectWord("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectWord("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw error("expected a value, found \(describeCurrent())")
        }
    }

    private mutating func enter() throws {
        depth += 1
        if depth > JSONParser.maxDepth { throw error("nesting deeper than \(JSONParser.maxDepth) levels") }
    }

    private mutating func parseObject() throws -> JSONValue {
        try enter()
        defer { depth -= 1 }
        pos += 1  // {
        var obj = JSONObject()
        skipWhitespace()
        if peek() == UInt8(ascii: "}") { pos += 1; return .object(obj) }
        while true {
            skipWhitespace()
            guard peek() == UInt8(ascii: "\"") else { throw error("expected a string key, found \(describeCurrent())") }
            let keyPos = pos
            let key = try parseString()
            if obj[key] != nil {
                pos = keyPos
                throw error("duplicate key \"\(key)\"")
            }
            skipWhitespace()
            guard peek() == UInt8(ascii: ":") else { throw error("expected ':' after key \"\(key)\", found \(describeCurrent())") }
            pos += 1
            skipWhitespace()
            obj.set(key, try parseValue())
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): pos += 1
            case UInt8(ascii: "}"): pos += 1; return .object(obj)
            default: throw error("expected ',' or '}' in object, found \(describeCurrent())")
            }
        }
    }

    private mutating func parseArray() throws -> JSONValue {
        try enter()
        defer { depth -= 1 }
        pos += 1  // [
        var items: [JSONValue] = []
        skipWhitespace()
        if peek() == UInt8(ascii: "]") { pos += 1; return .array(items) }
        while true {
            skipWhitespace()
            items.append(try parseValue())
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): pos += 1
            case UInt8(ascii: "]"): pos += 1; return .array(items)
            default: throw error("expected ',' or ']' in array, found \(describeCurrent())")
            }
        }
    }

    private mutating func parseString() throws -> String {
        let start = pos
        pos += 1  // opening quote
        var out: [UInt8] = []
        while true {
            guard pos < bytes.count else {
                pos = start
                throw error("unterminated string")
            }
            let b = bytes[pos]
            if b == UInt8(ascii: "\"") {
                pos += 1
                break
            }
            if b < 0x20 { throw error("control character 0x\(hex2(b)) in string (must be escaped)") }
            if b != UInt8(ascii: "\\") {
                out.append(b)
                pos += 1
                continue
            }
            pos += 1
            guard pos < bytes.count else { throw error("unterminated escape sequence") }
            let e = bytes[pos]
            pos += 1
            switch e {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "/"): out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var code = try parseHex4()
                if code >= 0xD800 && code < 0xDC00 {
                    // High surrogate: a low surrogate escape must follow.
                    guard pos + 1 < bytes.count, bytes[pos] == UInt8(ascii: "\\"), bytes[pos + 1] == UInt8(ascii: "u") else {
                        throw error("unpaired surrogate \\u\(hex4(code)) in string")
                    }
                    pos += 2
                    let low = try parseHex4()
                    guard low >= 0xDC00 && low < 0xE000 else { throw error("unpaired surrogate \\u\(hex4(code)) in string") }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                } else if code >= 0xDC00 && code < 0xE000 {
                    throw error("unpaired surrogate \\u\(hex4(code)) in string")
                }
                guard let scalar = Unicode.Scalar(code) else { throw error("invalid code point in \\u escape") }
                out.append(contentsOf: Array(String(Character(scalar)).utf8))
            default:
                pos -= 1
                throw error("invalid escape '\\\(printable(e))' in string")
            }
        }
        guard let s = String(validating: out, as: UTF8.self) else {
            pos = start
            throw error("string is not valid UTF-8")
        }
        return s
    }

    private mutating func parseHex4() throws -> UInt32 {
        guard pos + 4 <= bytes.count else { throw error("truncated \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[pos]
            let d: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw error("invalid hex digit '\(printable(c))' in \\u escape")
            }
            v = v << 4 | d
            pos += 1
        }
        return v
    }

    private mutating func parseNumber() throws -> JSONValue {
        let start = pos
        var isInteger = true
        if peek() == UInt8(ascii: "-") { pos += 1 }
        guard let first = peek(), isDigit(first) else { throw error("expected a digit after '-'") }
        if first == UInt8(ascii: "0") {
            pos += 1
            if let n = peek(), isDigit(n) { throw error("leading zeros are not allowed in numbers") }
        } else {
            while let c = peek(), isDigit(c) { pos += 1 }
        }
        if peek() == UInt8(ascii: ".") {
            isInteger = false
            pos += 1
            guard let c = peek(), isDigit(c) else { throw error("expected a digit after '.'") }
            while let c = peek(), isDigit(c) { pos += 1 }
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            isInteger = false
            pos += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { pos += 1 }
            guard let c = peek(), isDigit(c) else { throw error("expected a digit in the exponent") }
            while let c = peek(), isDigit(c) { pos += 1 }
        }
        let text = String(decoding: bytes[start..<pos], as: UTF8.self)
        if isInteger, let i = Int64(text) { return .int(i) }
        guard let d = Double(text), d.isFinite else {
            pos = start
            throw error("number \(text) is out of range")
        }
        return .double(d)
    }

    private mutating func expectWord(_ word: StaticString) throws {
        let w = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        guard pos + w.count <= bytes.count, bytes[pos..<pos + w.count].elementsEqual(w) else {
            throw error("expected a value, found \(describeCurrent())")
        }
        pos += w.count
    }

    // MARK: - Helpers

    private func peek() -> UInt8? { pos < bytes.count ? bytes[pos] : nil }
    private func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }

    private mutating func skipWhitespace() {
        while pos < bytes.count {
            switch bytes[pos] {
            case 0x20, 0x09, 0x0A, 0x0D: pos += 1
            default: return
            }
        }
    }

    private func describeCurrent() -> String {
        guard pos < bytes.count else { return "end of input" }
        let b = bytes[pos]
        if b >= 0x20 && b < 0x7F { return "'\(Character(Unicode.Scalar(b)))'" }
        return "byte 0x\(hex2(b))"
    }

    private func printable(_ b: UInt8) -> String {
        b >= 0x20 && b < 0x7F ? String(Character(Unicode.Scalar(b))) : "0x" + hex2(b)
    }

    private func error(_ what: String) -> LeapError {
        var line = 1
        var column = 1
        var i = 0
        let end = min(pos, bytes.count)
        while i < end {
            if bytes[i] == 0x0A {
                line += 1
                column = 1
            } else if bytes[i] & 0xC0 != 0x80 {
                column += 1
            }
            i += 1
        }
        return .serialization("invalid JSON at line \(line), column \(column): \(what)")
    }
}

func hex2(_ b: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return String([digits[Int(b >> 4)], digits[Int(b & 15)]])
}

func hex4(_ v: UInt32) -> String {
    let digits = Array("0123456789abcdef")
    return String((0..<4).map { digits[Int((v >> UInt32(12 - 4 * $0)) & 15)] })
}
