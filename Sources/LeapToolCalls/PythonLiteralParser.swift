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
///
/// Repairs of what models get wrong, each only where the text allows one reading, each noted in
/// `repairs` for the log:
/// - A set `{a, b}` is read as the list `[a, b]` in written order without repeats (JSON has no sets;
///   elements that are lists or dicts are refused, as Python refuses them).
/// - Quotes the model forgot to escape (`cmd='sed -n '1,9p' f'`): when a body does not parse and a
///   plain (not raw, not triple-quoted) string is followed by something that cannot follow a value,
///   each later quote of the same kind that is followed by `,` `)` `]` `}` `:` or the end is tried as
///   its closing quote, the quotes in between taken as part of the string. The repair is made only
///   when exactly one of these readings parses (counting the readings of later broken strings too);
///   `f(a='x'y', b='z')` has two (`a` = `x'y` or `x'y', b='z`) and stays an error.
/// - A call that does not parse among calls that do (`[f(a=1), g(x=b'z')]`): when its brackets and
///   quotes balance, so that its end is certain, it is left out and its siblings are kept. A body
///   whose every call is bad is an error.
struct PythonLiteralParser {
    static let maxDepth = 128
    /// The most readings the quote repair tries for one body (each is one parse of the body).
    static let maxQuoteRepairAttempts = 64

    private let bytes: [UInt8]
    private var pos = 0
    private var depth = 0
    /// What this parse repaired, in order (see the type's description).
    private(set) var repairs: [String] = []
    /// The quote repair's probe: a plain string whose closing quote is followed by something that cannot
    /// follow a value throws `BrokenString` instead of failing later.
    private var findBrokenString = false
    /// Calls that do not parse but whose brackets and quotes balance are skipped (their errors kept here).
    private var skipBadCalls = false
    private var skipped: [LeapError] = []

    init(_ text: String) { bytes = Array(text.utf8) }
    private init(bytes: [UInt8]) { self.bytes = bytes }

    /// A string whose closing quote at `close` (the one at `open` opened it) is followed by text that
    /// cannot follow a value.
    private struct BrokenString: Error {
        var open: Int
        var close: Int
    }

    /// Which body grammar: LFM's (Pythonic or JSON calls) or Hermes' (JSON objects).
    private enum Form { case lfm, hermes }

    /// One way of reading a body, with the repairs it took.
    private struct Reading {
        var calls: [LeapFunctionCall]
        var repairs: [String]
    }

    // MARK: - Entry points

    /// Parses a whole tool-call body in either the Pythonic or the JSON form. An empty body gives [].
    static func parseCalls(_ body: String) throws -> [LeapFunctionCall] {
        var repairs: [String] = []
        return try parseCalls(body, repairs: &repairs)
    }

    /// `parseCalls`, appending what was repaired to `repairs`.
    static func parseCalls(_ body: String, repairs: inout [String]) throws -> [LeapFunctionCall] {
        try parseRepairing(Array(body.utf8), .lfm, &repairs)
    }

    /// Parses a Hermes body: one JSON object `{"name": ..., "arguments": ...}` (a list of such objects
    /// is tolerated).
    static func parseJSONCalls(_ body: String) throws -> [LeapFunctionCall] {
        var repairs: [String] = []
        return try parseJSONCalls(body, repairs: &repairs)
    }

    /// `parseJSONCalls`, appending what was repaired to `repairs`.
    static func parseJSONCalls(_ body: String, repairs: inout [String]) throws -> [LeapFunctionCall] {
        try parseRepairing(Array(body.utf8), .hermes, &repairs)
    }

    /// The body as written; if that fails, the quote repair, then skipping bad calls. The error of the
    /// body as written is the one thrown when no repair applies.
    private static func parseRepairing(_ bytes: [UInt8], _ form: Form, _ repairs: inout [String]) throws -> [LeapFunctionCall] {
        var strict = PythonLiteralParser(bytes: bytes)
        let strictError: LeapError
        do {
            let calls = try strict.run(form)
            repairs += strict.repairs
            return calls
        } catch let e as LeapError {
            strictError = e
        }
        var budget = maxQuoteRepairAttempts
        let quoted = quoteRepairReadings(bytes, form, &budget, level: 0)
        if quoted.count == 1, let reading = quoted.reading {
            repairs += reading.repairs
            return reading.calls
        }
        var lenient = PythonLiteralParser(bytes: bytes)
        lenient.skipBadCalls = true
        if let calls = try? lenient.run(form), !lenient.skipped.isEmpty {
            repairs += lenient.repairs
            return calls
        }
        if quoted.count > 1 {
            throw LeapError(.functionCallParsing, strictError.message
                + " (unescaped quotes inside a string could end it in more than one place: not repaired)")
        }
        throw strictError
    }

    /// How many readings of `bytes` parse when the unescaped quotes of broken strings are taken as part
    /// of the string: 0, 1 (with that reading) or 2 for "more than one, or too many to try".
    private static func quoteRepairReadings(_ bytes: [UInt8], _ form: Form, _ budget: inout Int,
                                            level: Int) -> (count: Int, reading: Reading?) {
        var p = PythonLiteralParser(bytes: bytes)
        p.findBrokenString = true
        let broken: BrokenString
        do {
            let calls = try p.run(form)
            return (1, Reading(calls: calls, repairs: p.repairs))
        } catch let b as BrokenString {
            broken = b
        } catch {
            return (0, nil)
        }
        guard level < 8 else { return (2, nil) }
        let quote = bytes[broken.open]
        var count = 0
        var found: Reading?
        for close in (broken.close + 1)..<max(broken.close + 1, bytes.count)
        where bytes[close] == quote && !isEscaped(bytes, close) && isFollowedByDelimiter(bytes, close + 1) {
            guard budget > 0 else { return (2, nil) }
            budget -= 1
            // The quotes between the opening one and `close` escaped: they are the string's.
            var text = Array(bytes[...broken.open])
            for i in (broken.open + 1)..<close {
                if bytes[i] == quote && !isEscaped(bytes, i) { text.append(UInt8(ascii: "\\")) }
                text.append(bytes[i])
            }
            text += bytes[close...]
            let sub = quoteRepairReadings(text, form, &budget, level: level + 1)
            count += sub.count
            if count > 1 { return (2, nil) }
            if sub.count == 1, var reading = sub.reading {
                let written = String(decoding: bytes[broken.open...close], as: UTF8.self)
                reading.repairs.insert("took the unescaped quotes inside \(shortened(written)) as part of the string "
                                       + "(the only closing quote with which the call parses)", at: 0)
                found = reading
            }
        }
        return (count, found)
    }

    /// The whole body in `form`.
    private mutating func run(_ form: Form) throws -> [LeapFunctionCall] {
        skipWhitespace()
        var calls: [LeapFunctionCall] = []
        switch (form, peek()) {
        case (_, nil):
            return []
        case (.lfm, UInt8(ascii: "[")):
            let save = pos
            pos += 1
            skipWhitespace()
            let isJSON = peek() == UInt8(ascii: "{")
            pos = save
            calls = try parseCallList(json: isJSON)
        case (.lfm, UInt8(ascii: "{")):
            // One object, or several separated by commas or whitespace (no list brackets).
            while true {
                if let c = try parseListItem(json: true) { calls.append(c) }
                skipWhitespace()
                if peek() == UInt8(ascii: ",") { pos += 1; skipWhitespace() }
                guard peek() == UInt8(ascii: "{") else { break }
            }
        case (.lfm, _):
            // Bare calls without list brackets: `f(a=1)` or `f(), g()`.
            while true {
                if let c = try parseListItem(json: false) { calls.append(c) }
                skipWhitespace()
                guard peek() == UInt8(ascii: ",") else { break }
                pos += 1
                skipWhitespace()
            }
        case (.hermes, UInt8(ascii: "[")):
            calls = try parseCallList(json: true)
        case (.hermes, UInt8(ascii: "{")):
            calls = [try parseJSONCall()]
        case (.hermes, _):
            throw error("expected a JSON object {\"name\": ..., \"arguments\": {...}}", found: describeCurrent())
        }
        skipWhitespace()
        if pos < bytes.count {
            throw error(form == .lfm ? "expected the end of the function calls" : "expected the end of the function call",
                        found: describeCurrent())
        }
        if calls.isEmpty, let first = skipped.first { throw first }
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

    /// `[call, ...]` or `[{object}, ...]`.
    private mutating func parseCallList(json: Bool) throws -> [LeapFunctionCall] {
        pos += 1  // [
        var calls: [LeapFunctionCall] = []
        while true {
            skipWhitespace()
            if peek() == UInt8(ascii: "]") { pos += 1; return calls }
            if let c = try parseListItem(json: json) { calls.append(c) }
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): pos += 1
            case UInt8(ascii: "]"): pos += 1; return calls
            default: throw error("expected ',' or ']' after a function call\(json ? " object" : "")", found: describeCurrent())
            }
        }
    }

    /// One call of a list; nil when `skipBadCalls` skipped it (see the type's description).
    private mutating func parseListItem(json: Bool) throws -> LeapFunctionCall? {
        let start = pos
        do {
            return json ? try parseJSONCall() : try parseCall()
        } catch let e as LeapError where skipBadCalls {
            pos = start
            guard skipBalancedCall() else { throw e }
            skipped.append(e)
            let written = String(decoding: bytes[start..<pos], as: UTF8.self)
            let reason = e.message.firstRange(of: " in: ").map { String(e.message[..<$0.lowerBound]) } ?? e.message
            repairs.append("left out the call \(shortened(written)) that does not parse (\(reason)); the calls next to it are kept")
            return nil
        }
    }

    /// Moves past `name(...)` or `{...}` when its brackets and quotes balance; false (and `pos` kept)
    /// when they do not, or when there is no bracket to start from.
    private mutating func skipBalancedCall() -> Bool {
        var i = pos
        while i < bytes.count, isNameContinue(bytes[i]) || bytes[i] == UInt8(ascii: ".") || bytes[i] == UInt8(ascii: "-") { i += 1 }
        while i < bytes.count, isSpace(bytes[i]) { i += 1 }
        guard i < bytes.count, bytes[i] == UInt8(ascii: "(") || bytes[i] == UInt8(ascii: "{") else { return false }
        var open: [UInt8] = []
        while i < bytes.count {
            let c = bytes[i]
            switch c {
            case UInt8(ascii: "\""), UInt8(ascii: "'"):
                guard let end = endOfString(at: i) else { return false }
                i = end
                continue
            case UInt8(ascii: "("): open.append(UInt8(ascii: ")"))
            case UInt8(ascii: "["): open.append(UInt8(ascii: "]"))
            case UInt8(ascii: "{"): open.append(UInt8(ascii: "}"))
            case UInt8(ascii: ")"), UInt8(ascii: "]"), UInt8(ascii: "}"):
                guard open.popLast() == c else { return false }
                if open.isEmpty {
                    pos = i + 1
                    return true
                }
            default: break
            }
            i += 1
        }
        return false
    }

    /// The index after the string literal whose opening quote is at `i` (escapes skipped), nil when it
    /// is not closed.
    private func endOfString(at i: Int) -> Int? {
        let quote = bytes[i]
        let triple = i + 2 < bytes.count && bytes[i + 1] == quote && bytes[i + 2] == quote
        var j = i + (triple ? 3 : 1)
        while j < bytes.count {
            if bytes[j] == UInt8(ascii: "\\") { j += 2; continue }
            if bytes[j] == quote {
                if !triple { return j + 1 }
                if j + 2 < bytes.count && bytes[j + 1] == quote && bytes[j + 2] == quote { return j + 3 }
            }
            j += 1
        }
        return nil
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
        case UInt8(ascii: "{"): return try parseDictOrSet()
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

    /// `{}` and `{'k': v, ...}` are dicts; `{a, b}` is a set, read as a list (see the type's description).
    private mutating func parseDictOrSet() throws -> JSONValue {
        try enter()
        defer { depth -= 1 }
        let open = pos
        pos += 1  // {
        skipWhitespace()
        if peek() == UInt8(ascii: "}") { pos += 1; return .object(JSONObject()) }
        let first = pos
        let firstValue = try parseValue()
        skipWhitespace()
        switch peek() {
        case UInt8(ascii: ":"):
            guard case .string(let key) = firstValue else {
                pos = first
                throw error("expected a string key in a dict", found: describeCurrent())
            }
            return try parseDictEntries(firstKey: key)
        case UInt8(ascii: ","), UInt8(ascii: "}"):
            return try parseSetElements(first: firstValue, firstAt: first, open: open)
        default:
            throw error("expected ':' (a dict) or ',' or '}' (a set) after the first item in braces", found: describeCurrent())
        }
    }

    /// The rest of a dict whose first key has been read (`pos` at its ':').
    private mutating func parseDictEntries(firstKey: String) throws -> JSONValue {
        var obj = JSONObject()
        var key = firstKey
        while true {
            pos += 1  // :
            skipWhitespace()
            let v = try parseValue()
            obj.set(key, v)  // a repeated key keeps its position and takes the last value, as in Python
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): pos += 1
            case UInt8(ascii: "}"): pos += 1; return .object(obj)
            default: throw error("expected ',' or '}' in a dict", found: describeCurrent())
            }
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: "}"): pos += 1; return .object(obj)
            case UInt8(ascii: "\""), UInt8(ascii: "'"): key = try parseString(raw: false)
            default: throw error("expected a string key in a dict", found: describeCurrent())
            }
            skipWhitespace()
            guard peek() == UInt8(ascii: ":") else { throw error("expected ':' after the dict key \"\(key)\"", found: describeCurrent()) }
        }
    }

    /// The rest of a set whose first element has been read (`pos` at the ',' or '}' after it).
    private mutating func parseSetElements(first: JSONValue, firstAt: Int, open: Int) throws -> JSONValue {
        var items: [JSONValue] = []
        var at = firstAt
        var value = first
        while true {
            if bytes[at] == UInt8(ascii: "[") || bytes[at] == UInt8(ascii: "{") {
                pos = at
                throw error("expected a set element that Python can hash (a string, number, True/False/None or tuple)",
                            found: bytes[at] == UInt8(ascii: "[") ? "a list" : "a dict or set")
            }
            if !items.contains(value) { items.append(value) }
            skipWhitespace()
            if peek() == UInt8(ascii: "}") { pos += 1; break }
            guard peek() == UInt8(ascii: ",") else { throw error("expected ',' or '}' in a set", found: describeCurrent()) }
            pos += 1
            skipWhitespace()
            if peek() == UInt8(ascii: "}") { pos += 1; break }
            at = pos
            value = try parseValue()
        }
        let written = String(decoding: bytes[open..<pos], as: UTF8.self)
        repairs.append("read the set \(shortened(written)) as a list (JSON has no sets)")
        return .array(items)
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
                if !triple {
                    pos += 1
                    if findBrokenString && !raw && !PythonLiteralParser.isFollowedByDelimiter(bytes, pos) {
                        throw BrokenString(open: start, close: pos - 1)
                    }
                    break
                }
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
        while let c = peek(), isSpace(c) { pos += 1 }
    }

    private func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D }

    /// Whether what follows `i` (after whitespace) can follow a value: `,` `)` `]` `}` `:` or the end.
    private static func isFollowedByDelimiter(_ bytes: [UInt8], _ i: Int) -> Bool {
        var j = i
        while j < bytes.count, bytes[j] == 0x20 || bytes[j] == 0x09 || bytes[j] == 0x0A || bytes[j] == 0x0D { j += 1 }
        guard j < bytes.count else { return true }
        return [UInt8(ascii: ","), UInt8(ascii: ")"), UInt8(ascii: "]"), UInt8(ascii: "}"), UInt8(ascii: ":")].contains(bytes[j])
    }

    /// Whether the byte at `i` follows an odd number of backslashes.
    private static func isEscaped(_ bytes: [UInt8], _ i: Int) -> Bool {
        var n = 0
        var j = i - 1
        while j >= 0, bytes[j] == UInt8(ascii: "\\") { n += 1; j -= 1 }
        return n % 2 == 1
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

    /// `text` for a log line: at most 80 characters.
    private static func shortened(_ text: String) -> String {
        text.count <= 80 ? text : String(text.prefix(77)) + "..."
    }
    private func shortened(_ text: String) -> String { PythonLiteralParser.shortened(text) }

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
