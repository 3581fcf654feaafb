import LeapCore
import LeapJSON

// JSON Schema → grammar.
//
// Every document the grammar accepts parses as JSON (LeapJSON) and validates against the schema; the
// grammar may be stricter than the schema (it never needs to produce every valid document):
//
// - Objects: the properties appear in schema order; optional ones may be left out. Extra properties
//   are allowed only when `additionalProperties` is `true` or a schema (absent means false: a model
//   should produce what the schema describes, nothing else); extra keys come after the declared ones,
//   contain no escapes and differ from every declared key. Required keys missing from `properties` are
//   added (with the `additionalProperties` schema, or any value). Free-form keys (extra properties,
//   the empty schema) cannot be checked against each other by a grammar, so the grammar alone allows two
//   equal free-form keys in one object; decoding pairs it with `JSONKeyTracker`, which rejects a token
//   that would close a repeated key (the runtime then draws another).
// - Arrays: `items`, `prefixItems` (and the older array form of `items` with `additionalItems`),
//   `minItems`, `maxItems` (at most 10000).
// - Strings: any JSON string (escapes incl. `\uXXXX` with valid surrogate pairs, valid UTF-8, no raw
//   control characters); `minLength`/`maxLength` count code points; `format`,
//   `contentEncoding` and `contentMediaType` are ignored (any string).
// - Numbers and integers: at most 18 integer digits, 20 fraction digits and 2 exponent digits (so a
//   model cannot run on forever). Integer `minimum`/`maximum`/`exclusive*` are enforced exactly. For
//   numbers, bounds are enforced through the integer part (no exponent then): an integer part strictly
//   inside the bounds takes any fraction, an inclusive boundary only a zero fraction, an exclusive
//   integral boundary only a nonzero fraction (`exclusiveMinimum: 0` allows 0.5). Non-integral bounds
//   are rounded inwards (minimum 0.5 allows 1 and up), which can leave nothing (→ unsupported).
// - `enum`/`const` of any JSON value: the exact value (strings and numbers spelled as LeapJSON writes
//   them; objects keep their key order, whitespace allowed between tokens), filtered by `type`.
// - `anyOf`/`oneOf` are alternatives (oneOf's exclusivity is not enforced); sibling keywords are merged
//   into each branch. `allOf` is merged into one schema (conflicting keywords → unsupported).
// - `$ref` to any JSON pointer inside the document (`#`, `#/$defs/x`, `#/definitions/x`, ...);
//   recursion works; branches that can never finish are removed, and a schema with no finite value or a
//   `$ref` cycle that consumes nothing is an error.
// - No `type` → inferred from the keywords present (properties → object, items → array, ...), else any
//   JSON value. `nullable: true` (OpenAPI) adds null. The empty schema and `true` are any JSON value.
// - Keywords that constrain values but cannot be enforced (`pattern`, `not`, `if`, `multipleOf`,
//   `uniqueItems: true`, ...) are rejected with `.unsupported`; malformed schemas with
//   `.invalidArgument`; both name the JSON pointer of the offending schema.
//
// Whitespace between tokens is bounded: nothing, one space, or a newline followed by up to
// `maxIndent` spaces (default 32). No whitespace before or after the top-level value.

package struct JSONSchemaGrammar: Sendable {
    package struct Options: Sendable {
        /// Spaces allowed after a newline between tokens.
        package var maxIndent: Int = 32
        package init(maxIndent: Int = 32) { self.maxIndent = maxIndent }
    }

    package let schema: JSONValue
    package let grammar: Grammar

    package init(schema: JSONValue, options: Options = Options()) throws {
        self.schema = schema
        var c = SchemaCompiler(root: schema, options: options)
        grammar = try c.compileRoot()
    }

    /// From the schema's JSON text.
    package init(schemaText: String, options: Options = Options()) throws {
        let v: JSONValue
        do {
            v = try JSONParser.parse(schemaText)
        } catch let e as LeapError {
            throw LeapError(.invalidArgument, "JSON schema is not valid JSON: \(e.message)")
        }
        try self.init(schema: v, options: options)
    }

    package func makeMatcher() -> GrammarMatcher { GrammarMatcher(grammar: grammar) }
}

/// Schema → rules. One compiler per schema; rules for `$ref` targets and equal subschemas are shared.
struct SchemaCompiler {
    typealias Seq = GrammarBuilder.Seq
    static let maxRepeat = 10000   // largest enforced maxItems / minItems
    static let maxNesting = 200    // nested subschemas (not counting $ref hops)
    static let maxRules = 400_000  // grammar size budget for hostile schemas
    static let maxIntDigits = 18
    static let maxFracDigits = 20
    static let intCap: Int64 = 999_999_999_999_999_999  // 18 digits

    var g = GrammarBuilder()
    let root: JSONValue
    let options: JSONSchemaGrammar.Options
    // Keyed by UTF-8 bytes: a String key is equal under canonical equivalence, which would give
    // {"const": "e\u0301"} the rule of {"const": "\u00e9"}, or one $ref another's target.
    var refRules: [[UInt8]: Int] = [:]   // by $ref string
    var compiled: [[UInt8]: Int] = [:]   // by compact schema text
    var nesting = 0
    private var cache: [String: Int] = [:]  // shared helper rules by name

    init(root: JSONValue, options: JSONSchemaGrammar.Options) {
        self.root = root
        self.options = options
    }

    mutating func compileRoot() throws -> Grammar {
        let r = try compile(root, "#")
        return try g.finish(root: r)
    }

    // MARK: - Byte classes and shared rules

    static let digit = ByteSet(UInt8(ascii: "0")...UInt8(ascii: "9"))
    static let digit19 = ByteSet(UInt8(ascii: "1")...UInt8(ascii: "9"))
    static let hex: ByteSet = {
        var s = ByteSet(UInt8(ascii: "0")...UInt8(ascii: "9"))
        s.insert(UInt8(ascii: "a")...UInt8(ascii: "f"))
        s.insert(UInt8(ascii: "A")...UInt8(ascii: "F"))
        return s
    }()
    /// ASCII that may appear raw in a string: not a control character, quote or backslash.
    static let plainASCII: ByteSet = {
        var s = ByteSet(0x20...0x7F)
        s = s.subtracting(ByteSet([UInt8(ascii: "\""), UInt8(ascii: "\\")]))
        return s
    }()

    /// Shared rules are built once.
    mutating func shared(_ name: String, _ make: (inout SchemaCompiler) -> Int) -> Int {
        if let r = cache[name] { return r }
        let r = make(&self)
        cache[name] = r
        return r
    }

    var ws: Int {
        mutating get {
            shared("ws") { c in
                let indent = c.repeatRule("indent", [.byte(0x20)], 0, c.options.maxIndent)
                return c.g.rule("ws", [[], [.byte(0x20)], [.byte(0x0A), .rule(indent)]])
            }
        }
    }

    /// A multi-byte UTF-8 character (no overlongs, no surrogates) whose lead byte is in `leads`.
    mutating func utf8Multibyte(leads: ByteSet) -> Int {
        let cont = ByteSet(0x80...0xBF)
        var alts: [Seq] = []
        func add(_ lead: ClosedRange<UInt8>, _ rest: [ByteSet]) {
            let l = ByteSet(lead).subtracting(ByteSet(0...0xFF).subtracting(leads))
            if l.isEmpty { return }
            alts.append([.set(l)] + rest.map { .set($0) })
        }
        add(0xC2...0xDF, [cont])
        add(0xE0...0xE0, [ByteSet(0xA0...0xBF), cont])
        add(0xE1...0xEC, [cont, cont])
        add(0xED...0xED, [ByteSet(0x80...0x9F), cont])
        add(0xEE...0xEF, [cont, cont])
        add(0xF0...0xF0, [ByteSet(0x90...0xBF), cont, cont])
        add(0xF1...0xF3, [cont, cont, cont])
        add(0xF4...0xF4, [ByteSet(0x80...0x8F), cont, cont])
        if alts.isEmpty { alts = [[.set(ByteSet())]] }  // matches nothing
        return g.rule("utf8", alts)
    }

    /// Any JSON string.
    var anyString: Int {
        mutating get { shared("string") { c in c.g.rule("string", [[.byte(0x22), .string(min: 0, max: nil)]]) } }
    }

    var fraction: Int {
        mutating get {
            shared("frac") { c in
                let digits = c.repeatRule("frac-digits", [.set(SchemaCompiler.digit)], 1, SchemaCompiler.maxFracDigits)
                return c.g.rule("frac", [[], [.byte(UInt8(ascii: ".")), .rule(digits)]])
            }
        }
    }

    var zeroFraction: Int {
        mutating get {
            shared("frac0") { c in
                let zeros = c.repeatRule("zeros", [.byte(UInt8(ascii: "0"))], 1, SchemaCompiler.maxFracDigits)
                return c.g.rule("frac0", [[], [.byte(UInt8(ascii: ".")), .rule(zeros)]])
            }
        }
    }

    /// `.` then fraction digits that are not all zero.
    var nonzeroFraction: Int {
        mutating get {
            shared("frac-nonzero") { c in
                var nz = c.g.rule("nonzero-digits", [[.set(SchemaCompiler.digit19)]])
                for k in 2...SchemaCompiler.maxFracDigits {
                    let rest = c.repeatRule("digits", [.set(SchemaCompiler.digit)], 0, k - 1)
                    nz = c.g.rule("nonzero-digits", [[.set(SchemaCompiler.digit19), .rule(rest)], [.byte(UInt8(ascii: "0")), .rule(nz)]])
                }
                return c.g.rule("frac-nonzero", [[.byte(UInt8(ascii: ".")), .rule(nz)]])
            }
        }
    }

    /// `-?(0|[1-9][0-9]{0,17})`
    var anyInteger: Int {
        mutating get {
            shared("integer") { c in
                let more = c.repeatRule("digits", [.set(SchemaCompiler.digit)], 0, SchemaCompiler.maxIntDigits - 1)
                let mag = c.g.rule("uint", [[.byte(UInt8(ascii: "0"))], [.set(SchemaCompiler.digit19), .rule(more)]])
                return c.g.rule("integer", [[.rule(mag)], [.byte(UInt8(ascii: "-")), .rule(mag)]])
            }
        }
    }

    var anyNumber: Int {
        mutating get {
            shared("number") { c in
                let int = c.anyInteger
                let frac = c.fraction
                let expDigits = c.repeatRule("exp-digits", [.set(SchemaCompiler.digit)], 1, 2)
                let exp = c.g.rule("exp", [[], [.set(ByteSet(Array("eE".utf8))), .rule(expDigits)],
                                            [.set(ByteSet(Array("eE".utf8))), .set(ByteSet(Array("+-".utf8))), .rule(expDigits)]])
                return c.g.rule("number", [[.rule(int), .rule(frac), .rule(exp)]])
            }
        }
    }

    /// Any JSON value (the empty schema).
    var anyValue: Int {
        mutating get {
            if let r = cache["value"] { return r }
            let value = g.declare("value")
            cache["value"] = value
            let ws = self.ws, str = anyString, num = anyNumber
            let comma: Seq = [.rule(ws), .byte(UInt8(ascii: ",")), .rule(ws)]
            let kv: Seq = [.rule(str), .rule(ws), .byte(UInt8(ascii: ":")), .rule(ws), .rule(value)]
            let members = g.declare("members")
            g.define(members, [[.rule(ws), .byte(UInt8(ascii: "}"))], comma + kv + [.rule(members)]])
            let object = g.rule("object", [GrammarBuilder.literal("{") + [.rule(ws), .byte(UInt8(ascii: "}"))],
                                            GrammarBuilder.literal("{") + [.rule(ws)] + kv + [.rule(members)]])
            let elems = g.declare("elements")
            g.define(elems, [[.rule(ws), .byte(UInt8(ascii: "]"))], comma + [.rule(value), .rule(elems)]])
            let array = g.rule("array", [GrammarBuilder.literal("[") + [.rule(ws), .byte(UInt8(ascii: "]"))],
                                          GrammarBuilder.literal("[") + [.rule(ws), .rule(value), .rule(elems)]])
            g.define(value, [[.rule(object)], [.rule(array)], [.rule(str)], [.rule(num)],
                             GrammarBuilder.literal("true"), GrammarBuilder.literal("false"), GrammarBuilder.literal("null")])
            return value
        }
    }

    /// `item{min,max}` (max nil: unbounded).
    mutating func repeatRule(_ name: String, _ item: Seq, _ min: Int, _ max: Int?) -> Int {
        var seq: Seq = []
        for _ in 0..<min { seq += item }
        if let max {
            var tail = g.rule(name, [[]])
            if max > min {
                for _ in 0..<(max - min) { tail = g.rule(name, [[], item + [.rule(tail)]]) }
            }
            return seq.isEmpty ? tail : g.rule(name, [seq + [.rule(tail)]])
        }
        let loop = g.declare(name + "*")
        g.define(loop, [[], item + [.rule(loop)]])
        return g.rule(name, [seq + [.rule(loop)]])
    }

    // MARK: - Schemas

    static let annotations: Set<String> = [
        "title", "description", "default", "examples", "$comment", "$schema", "$id", "$anchor", "deprecated",
        "readOnly", "writeOnly", "format", "contentEncoding", "contentMediaType", "contentSchema", "$defs",
        "definitions", "discriminator", "xml", "externalDocs", "example",
    ]
    static let unsupported = [
        "pattern", "patternProperties", "not", "if", "then", "else", "multipleOf", "contains", "minContains",
        "maxContains", "dependentRequired", "dependentSchemas", "dependencies", "propertyNames",
        "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef",
    ]

    static func pointerEscape(_ key: String) -> String {
        var out = String.UnicodeScalarView()
        for c in key.unicodeScalars {
            switch c {
            case "~": out.append(contentsOf: "~0".unicodeScalars)
            case "/": out.append(contentsOf: "~1".unicodeScalars)
            default: out.append(c)
            }
        }
        return String(out)
    }

    /// A pointer token's text: "~1" is "/", "~0" is "~" (in that order, RFC 6901 §4), on bytes.
    static func pointerUnescape(_ token: ArraySlice<UInt8>) -> String {
        var out: [UInt8] = []
        var i = token.startIndex
        while i < token.endIndex {
            if token[i] == UInt8(ascii: "~"), i + 1 < token.endIndex, token[i + 1] == UInt8(ascii: "1") || token[i + 1] == UInt8(ascii: "0") {
                out.append(token[i + 1] == UInt8(ascii: "1") ? UInt8(ascii: "/") : UInt8(ascii: "~"))
                i += 2
            } else {
                out.append(token[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    func invalid(_ path: String, _ msg: String) -> LeapError { LeapError(.invalidArgument, "schema at \(path): \(msg)") }
    func unsupported(_ path: String, _ msg: String) -> LeapError { LeapError(.unsupported, "schema at \(path): \(msg)") }

    /// Compiles `schema` (found at JSON pointer `path`) into a rule. Equal subschemas share one rule
    /// (anyOf siblings merged into every branch would otherwise multiply).
    mutating func compile(_ schema: JSONValue, _ path: String) throws -> Int {
        let key = Array(schema.serialized().utf8)
        if let r = compiled[key] { return r }
        if g.ruleCount > SchemaCompiler.maxRules {
            throw unsupported(path, "the schema is too large (more than \(SchemaCompiler.maxRules) grammar rules)")
        }
        let r = try compileUncached(schema, path)
        compiled[key] = r
        return r
    }

    mutating func compileUncached(_ schema: JSONValue, _ path: String) throws -> Int {
        nesting += 1
        defer { nesting -= 1 }
        if nesting > SchemaCompiler.maxNesting {
            throw unsupported(path, "schemas nested deeper than \(SchemaCompiler.maxNesting) levels")
        }
        switch schema {
        case .bool(true): return anyValue
        case .bool(false): throw invalid(path, "the schema 'false' allows no value")
        case .object(let o): return try compileObjectSchema(o, path)
        default: throw invalid(path, "a schema must be an object or a boolean, found \(schema.typeName)")
        }
    }

    mutating func compileObjectSchema(_ o0: JSONObject, _ path: String) throws -> Int {
        var o = o0
        for k in SchemaCompiler.unsupported where o[k] != nil {
            throw unsupported(path, "'\(k)' is not supported")
        }
        if let u = o["uniqueItems"] {
            guard let b = u.boolValue else { throw invalid(path, "'uniqueItems' must be a boolean, found \(u.typeName)") }
            if b { throw unsupported(path, "'uniqueItems: true' is not supported") }
        }
        if let ref = o["$ref"] {
            guard let s = ref.stringValue else { throw invalid(path, "'$ref' must be a string, found \(ref.typeName)") }
            return try compileRef(s, path)
        }
        if let all = o["allOf"] {
            o = try mergeAllOf(o, all, path)
            return try compileObjectSchema(o, path)
        }
        for key in ["anyOf", "oneOf"] {
            guard let branches = o[key] else { continue }
            guard let list = branches.arrayValue, !list.isEmpty else {
                throw invalid(path, "'\(key)' must be a non-empty array of schemas")
            }
            var siblings = o
            siblings[key] = nil
            let hasSiblings = siblings.contains { !SchemaCompiler.annotations.contains($0.key) && $0.key != "nullable" }
            var alts: [Seq] = []
            for (i, b) in list.enumerated() {
                let bpath = "\(path)/\(key)/\(i)"
                if hasSiblings {
                    guard case .object(var bo) = try resolveShallow(b, bpath) else {
                        if b == .bool(true) { alts.append([.rule(try compileObjectSchema(siblings, path))]) }
                        continue
                    }
                    bo = try merge(bo, siblings, bpath)
                    alts.append([.rule(try compileObjectSchema(bo, bpath))])
                } else {
                    if b == .bool(false) { continue }
                    alts.append([.rule(try compile(b, bpath))])
                }
            }
            if o["nullable"]?.boolValue == true { alts.append(GrammarBuilder.literal("null")) }
            if alts.isEmpty { throw invalid(path, "every '\(key)' branch is 'false'") }
            return g.rule(key, alts)
        }

        // Types.
        var types: [String]
        switch o["type"] {
        case nil: types = inferTypes(o)
        case .string(let t)?: types = [t]
        case .array(let list)?:
            types = []
            for t in list {
                guard let s = t.stringValue else { throw invalid(path, "'type' entries must be strings, found \(t.typeName)") }
                types.append(s)
            }
            if types.isEmpty { throw invalid(path, "'type' is an empty array") }
        case let other?: throw invalid(path, "'type' must be a string or an array of strings, found \(other.typeName)")
        }
        let known = ["string", "number", "integer", "boolean", "null", "object", "array"]
        for t in types where !known.contains(t) {
            throw invalid(path, "unknown type \"\(t)\" (expected one of \(known.joined(separator: ", ")))")
        }
        if o["nullable"]?.boolValue == true && !types.contains("null") && !types.isEmpty { types.append("null") }

        // enum / const: literals of the allowed types.
        if o["enum"] != nil || o["const"] != nil {
            var values: [JSONValue]
            if let c = o["const"] {
                values = [c]
                if let e = o["enum"] {
                    guard let list = e.arrayValue else { throw invalid(path, "'enum' must be an array, found \(e.typeName)") }
                    if !list.contains(c) { throw invalid(path, "'const' is not one of the 'enum' values") }
                }
            } else {
                guard let list = o["enum"]?.arrayValue else { throw invalid(path, "'enum' must be an array, found \(o["enum"]?.typeName ?? "nothing")") }
                if list.isEmpty { throw invalid(path, "'enum' is empty: no value is allowed") }
                values = list
            }
            if !types.isEmpty { values = values.filter { SchemaCompiler.valueHasType($0, types) } }
            if values.isEmpty { throw invalid(path, "no 'enum'/'const' value has the type \(types.joined(separator: " or "))") }
            var alts: [Seq] = []
            for v in values { alts.append(literal(v)) }
            return g.rule("enum", alts)
        }

        if types.isEmpty { return anyValue }
        var alts: [Seq] = []
        for t in types {
            switch t {
            case "string": alts.append([.rule(try compileString(o, path))])
            case "number": alts.append([.rule(try compileNumber(o, path, integer: false))])
            case "integer": alts.append([.rule(try compileNumber(o, path, integer: true))])
            case "boolean": alts += [GrammarBuilder.literal("true"), GrammarBuilder.literal("false")]
            case "null": alts.append(GrammarBuilder.literal("null"))
            case "object": alts.append([.rule(try compileObject(o, path))])
            default: alts.append([.rule(try compileArray(o, path))])
            }
        }
        return alts.count == 1 && alts[0].count == 1 ? ruleOf(alts[0][0]) : g.rule("types", alts)
    }

    /// Exactly this value: scalars as LeapJSON writes them, objects and arrays with the same keys and
    /// items in the same order, whitespace allowed between tokens as elsewhere.
    mutating func literal(_ v: JSONValue) -> Seq {
        switch v {
        case .array(let items):
            if items.isEmpty { return GrammarBuilder.literal("[") + [.rule(ws), .byte(UInt8(ascii: "]"))] }
            var seq = GrammarBuilder.literal("[") + [.rule(ws)]
            for (i, x) in items.enumerated() {
                if i > 0 { seq += [.rule(ws), .byte(UInt8(ascii: ",")), .rule(ws)] }
                seq += literal(x)
            }
            return seq + [.rule(ws), .byte(UInt8(ascii: "]"))]
        case .object(let o):
            if o.isEmpty { return GrammarBuilder.literal("{") + [.rule(ws), .byte(UInt8(ascii: "}"))] }
            var seq = GrammarBuilder.literal("{") + [.rule(ws)]
            for (i, e) in o.entries.enumerated() {
                if i > 0 { seq += [.rule(ws), .byte(UInt8(ascii: ",")), .rule(ws)] }
                seq += GrammarBuilder.literal(JSONValue.string(e.key).serialized())
                seq += [.rule(ws), .byte(UInt8(ascii: ":")), .rule(ws)] + literal(e.value)
            }
            return seq + [.rule(ws), .byte(UInt8(ascii: "}"))]
        default:
            return GrammarBuilder.literal(v.serialized())
        }
    }

    private func ruleOf(_ s: GrammarBuilder.Symbol) -> Int {
        if case .rule(let r) = s { return r }
        return 0
    }

    /// No `type`: the keywords tell what is meant (an empty list means any value).
    func inferTypes(_ o: JSONObject) -> [String] {
        var t: [String] = []
        if o["properties"] != nil || o["required"] != nil || o["additionalProperties"] != nil { t.append("object") }
        if o["items"] != nil || o["prefixItems"] != nil || o["minItems"] != nil || o["maxItems"] != nil { t.append("array") }
        if o["minLength"] != nil || o["maxLength"] != nil { t.append("string") }
        if o["minimum"] != nil || o["maximum"] != nil || o["exclusiveMinimum"] != nil || o["exclusiveMaximum"] != nil {
            t.append("number")
        }
        return t
    }

    static func valueHasType(_ v: JSONValue, _ types: [String]) -> Bool {
        switch v {
        case .null: return types.contains("null")
        case .bool: return types.contains("boolean")
        case .int: return types.contains("integer") || types.contains("number")
        case .double(let d): return types.contains("number") || (types.contains("integer") && d.rounded() == d)
        case .string: return types.contains("string")
        case .array: return types.contains("array")
        case .object: return types.contains("object")
        }
    }

    // MARK: $ref, allOf

    /// Resolves a local JSON pointer reference to the schema it names. The pointer is split on its bytes
    /// (RFC 6901 works on code points; a "/" followed by a combining mark is one Character, and not "/").
    func resolve(_ ref: String, _ path: String) throws -> JSONValue {
        let bytes = Array(ref.utf8)
        guard bytes.first == UInt8(ascii: "#") else {
            throw unsupported(path, "$ref \"\(ref)\" is not a local reference (only \"#...\" pointers are supported)")
        }
        let pointer = bytes.dropFirst()
        if pointer.isEmpty { return root }
        guard pointer.first == UInt8(ascii: "/") else {
            throw unsupported(path, "$ref \"\(ref)\": only JSON pointers are supported (no anchors)")
        }
        var cur = root
        var walked = "#"
        for rawBytes in pointer.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            let raw = String(decoding: rawBytes, as: UTF8.self)
            let token = SchemaCompiler.pointerUnescape(rawBytes)
            switch cur {
            case .object(let obj):
                guard let next = obj[token] else {
                    throw invalid(path, "$ref \"\(ref)\" does not resolve: no \"\(token)\" in \(walked)")
                }
                cur = next
            case .array(let arr):
                guard let i = Int(token), i >= 0, i < arr.count else {
                    throw invalid(path, "$ref \"\(ref)\" does not resolve: no index \(token) in \(walked)")
                }
                cur = arr[i]
            default:
                throw invalid(path, "$ref \"\(ref)\" does not resolve: \(walked) is \(cur.typeName)")
            }
            walked += "/" + raw
        }
        return cur
    }

    mutating func compileRef(_ ref: String, _ path: String) throws -> Int {
        if let r = refRules[Array(ref.utf8)] { return r }
        let target = try resolve(ref, path)
        let r = g.declare("ref " + ref)
        refRules[Array(ref.utf8)] = r
        let body = try compile(target, ref)
        g.define(r, [[.rule(body)]])
        return r
    }

    /// A schema with a top-level `$ref` replaced by its target (for merging).
    func resolveShallow(_ s: JSONValue, _ path: String) throws -> JSONValue {
        var cur = s
        var hops = 0
        while case .object(let o) = cur, let ref = o["$ref"]?.stringValue {
            hops += 1
            if hops > 32 { throw invalid(path, "$ref chain longer than 32 hops") }
            var target = try resolve(ref, path)
            if case .object(var t) = target {
                for (k, v) in o where k != "$ref" && t[k] == nil { t.set(k, v) }
                target = .object(t)
            }
            cur = target
        }
        return cur
    }

    mutating func mergeAllOf(_ o: JSONObject, _ all: JSONValue, _ path: String) throws -> JSONObject {
        guard let list = all.arrayValue, !list.isEmpty else { throw invalid(path, "'allOf' must be a non-empty array of schemas") }
        var out = o
        out["allOf"] = nil
        for (i, s) in list.enumerated() {
            let spath = "\(path)/allOf/\(i)"
            switch try resolveShallow(s, spath) {
            case .bool(true): continue
            case .bool(false): throw invalid(spath, "the schema 'false' allows no value")
            case .object(let so): out = try merge(out, so, spath)
            default: throw invalid(spath, "a schema must be an object or a boolean, found \(s.typeName)")
            }
        }
        return out
    }

    /// Both schemas at once (keywords of `b` added to `a`); conflicts that need real intersection are
    /// unsupported.
    func merge(_ a: JSONObject, _ b: JSONObject, _ path: String) throws -> JSONObject {
        var out = a
        for (k, v) in b {
            guard let mine = out[k] else { out.set(k, v); continue }
            if mine == v || SchemaCompiler.annotations.contains(k) { continue }
            switch k {
            case "required":
                var list = mine.arrayValue ?? []
                for x in v.arrayValue ?? [] where !list.contains(x) { list.append(x) }
                out.set(k, .array(list))
            case "properties":
                guard var p = mine.objectValue, let q = v.objectValue else { fallthrough }
                for (pk, pv) in q {
                    if let existing = p[pk], existing != pv {
                        p.set(pk, .object(JSONObject([("allOf", .array([existing, pv]))])))
                    } else {
                        p.set(pk, pv)
                    }
                }
                out.set(k, .object(p))
            case "minimum", "minLength", "minItems", "exclusiveMinimum":
                guard let x = mine.doubleValue, let y = v.doubleValue else { fallthrough }
                out.set(k, x >= y ? mine : v)
            case "maximum", "maxLength", "maxItems", "exclusiveMaximum":
                guard let x = mine.doubleValue, let y = v.doubleValue else { fallthrough }
                out.set(k, x <= y ? mine : v)
            default:
                throw unsupported(path, "combining schemas with different '\(k)' values is not supported")
            }
        }
        return out
    }

    // MARK: Strings

    func count(_ o: JSONObject, _ key: String, _ path: String) throws -> Int? {
        guard let v = o[key] else { return nil }
        guard let i = v.intValue, i >= 0 else { throw invalid(path, "'\(key)' must be a non-negative integer, found \(v.serialized())") }
        return Int(clamping: i)
    }

    mutating func compileString(_ o: JSONObject, _ path: String) throws -> Int {
        let minLen = try count(o, "minLength", path) ?? 0
        let maxLen = try count(o, "maxLength", path)
        if minLen == 0 && maxLen == nil { return anyString }
        if let maxLen, maxLen < minLen { throw invalid(path, "'minLength' \(minLen) is greater than 'maxLength' \(maxLen)") }
        if (maxLen ?? minLen) > 1 << 24 {
            throw unsupported(path, "string lengths above \(1 << 24) cannot be enforced")
        }
        return g.rule("string", [[.byte(0x22), .string(min: minLen, max: maxLen)]])
    }

    // MARK: Numbers

    mutating func compileNumber(_ o: JSONObject, _ path: String, integer: Bool) throws -> Int {
        func bound(_ key: String) throws -> Double? {
            guard let v = o[key] else { return nil }
            if key.hasPrefix("exclusive"), v.boolValue != nil { return nil }  // draft-4 booleans, handled below
            guard let d = v.doubleValue, d.isFinite else { throw invalid(path, "'\(key)' must be a number, found \(v.serialized())") }
            return d
        }
        var lo = try bound("minimum"), hi = try bound("maximum")
        var loExcl = false, hiExcl = false
        if o["exclusiveMinimum"]?.boolValue == true { loExcl = true }  // draft 4
        if o["exclusiveMaximum"]?.boolValue == true { hiExcl = true }
        if let x = try bound("exclusiveMinimum"), lo.map({ x >= $0 }) ?? true { lo = x; loExcl = true }
        if let x = try bound("exclusiveMaximum"), hi.map({ x <= $0 }) ?? true { hi = x; hiExcl = true }
        if lo == nil && hi == nil { return integer ? anyInteger : anyNumber }
        let cap = Double(SchemaCompiler.intCap)
        // The integers within the bounds.
        let iLo: Int64? = lo.map { Int64(Swift.max(-cap, Swift.min(cap + 1, loExcl ? ($0.rounded(.down) + 1) : $0.rounded(.up)))) }
        let iHi: Int64? = hi.map { Int64(Swift.max(-cap - 1, Swift.min(cap, hiExcl ? ($0.rounded(.up) - 1) : $0.rounded(.down)))) }
        let describe = "[\(lo.map { "\($0)" } ?? "-inf"), \(hi.map { "\($0)" } ?? "inf")]"
        if integer {
            let alts = intRange(iLo, iHi)
            if alts.isEmpty { throw invalid(path, "no integer lies within the bounds \(describe)") }
            return g.rule("int-range", alts)
        }
        // Numbers: integer part strictly inside → any fraction; at the upper boundary → zero fraction.
        let frac = fraction, frac0 = zeroFraction
        var alts: [Seq] = []
        if iHi.map({ $0 >= 0 }) ?? true {
            let from = Swift.max(iLo ?? 0, 0)
            if let iHi {
                if iHi - 1 >= from { alts += posRange(from, iHi - 1).map { $0 + [.rule(frac)] } }
                if iHi >= from { alts += posRange(iHi, iHi).map { $0 + [.rule(frac0)] } }
            } else {
                alts += posRange(from, nil).map { $0 + [.rule(frac)] }
            }
        }
        if iLo.map({ $0 < 0 }) ?? true {
            // x = -m: m's integer part within [-iHi, -iLo].
            let from = Swift.max(iHi.map { -$0 } ?? 0, 0)
            let minus: Seq = [.byte(UInt8(ascii: "-"))]
            if let iLo {
                let mHi = -iLo
                if mHi - 1 >= from { alts += posRange(from, mHi - 1).map { minus + $0 + [.rule(frac)] } }
                if mHi >= from { alts += posRange(mHi, mHi).map { minus + $0 + [.rule(frac0)] } }
            } else {
                alts += posRange(from, nil).map { minus + $0 + [.rule(frac)] }
            }
        }
        // An exclusive integral bound next to zero-fraction territory: "0.5" for exclusiveMinimum 0,
        // "-0.5" for exclusiveMaximum 0 (the integer part is the bound, the fraction must not be zero).
        if loExcl, let lo, lo == lo.rounded(), lo >= 0, lo < cap, hi.map({ lo + 1 <= $0 }) ?? true {
            alts += posRange(Int64(lo), Int64(lo)).map { $0 + [.rule(nonzeroFraction)] }
        }
        if hiExcl, let hi, hi == hi.rounded(), hi <= 0, -hi < cap, lo.map({ -hi + 1 <= -$0 }) ?? true {
            alts += posRange(Int64(-hi), Int64(-hi)).map { [.byte(UInt8(ascii: "-"))] + $0 + [.rule(nonzeroFraction)] }
        }
        if alts.isEmpty { throw unsupported(path, "no number with an integer boundary lies within \(describe)") }
        return g.rule("num-range", alts)
    }

    /// Decimal integers in [lo, hi] (nil: unbounded), without leading zeros or "-0".
    mutating func intRange(_ lo: Int64?, _ hi: Int64?) -> [Seq] {
        if let lo, let hi, lo > hi { return [] }
        var alts: [Seq] = []
        if hi.map({ $0 >= 0 }) ?? true {
            alts += posRange(Swift.max(lo ?? 0, 0), hi)
        }
        if lo.map({ $0 < 0 }) ?? true {
            let from = Swift.max(hi.map { -$0 } ?? 1, 1)
            let to = lo.map { -$0 }
            if to.map({ $0 >= from }) ?? true {
                alts += posRange(from, to).map { [.byte(UInt8(ascii: "-"))] + $0 }
            }
        }
        return alts
    }

    /// Non-negative decimal integers in [a, b] (b nil: up to 18 digits).
    mutating func posRange(_ a: Int64, _ b: Int64?) -> [Seq] {
        let cap = SchemaCompiler.intCap
        let hi = Swift.min(b ?? cap, cap)
        guard a <= hi else { return [] }
        let digitsA = String(a).utf8.count
        var alts: [Seq] = []
        if b == nil {
            // The length of `a`, then every longer length at once.
            alts += sameLength(Array(String(a).utf8), [UInt8](repeating: UInt8(ascii: "9"), count: digitsA))
            if digitsA < SchemaCompiler.maxIntDigits {
                let more = repeatRule("digits", [.set(SchemaCompiler.digit)], digitsA, SchemaCompiler.maxIntDigits - 1)
                alts.append([.set(SchemaCompiler.digit19), .rule(more)])
            }
            return alts
        }
        let digitsB = String(hi).utf8.count
        for len in digitsA...digitsB {
            let low = len == 1 ? a : Swift.max(a, SchemaCompiler.pow10(len - 1))
            let high = Swift.min(hi, SchemaCompiler.pow10(len) - 1)
            if low <= high { alts += sameLength(Array(String(low).utf8), Array(String(high).utf8)) }
        }
        return alts
    }

    static func pow10(_ n: Int) -> Int64 {
        var p: Int64 = 1
        for _ in 0..<n { p *= 10 }
        return p
    }

    /// Digit strings of equal length between `lo` and `hi` (inclusive), as byte-set sequences.
    func sameLength(_ lo: [UInt8], _ hi: [UInt8]) -> [Seq] {
        let n = lo.count
        if n == 0 { return [[]] }
        if lo == hi { return [GrammarBuilder.literal(lo)] }
        let l0 = lo[0], h0 = hi[0]
        let loRest = Array(lo[1...]), hiRest = Array(hi[1...])
        if l0 == h0 { return sameLength(loRest, hiRest).map { [.byte(l0)] + $0 } }
        let zero = UInt8(ascii: "0"), nine = UInt8(ascii: "9")
        var out: [Seq] = []
        var mid0 = l0 + 1, mid1 = h0 - 1
        if loRest.allSatisfy({ $0 == zero }) {
            mid0 = l0
        } else {
            out += sameLength(loRest, [UInt8](repeating: nine, count: n - 1)).map { [.byte(l0)] + $0 }
        }
        var upper: [Seq] = []
        if hiRest.allSatisfy({ $0 == nine }) {
            mid1 = h0
        } else {
            upper = sameLength([UInt8](repeating: zero, count: n - 1), hiRest).map { [.byte(h0)] + $0 }
        }
        if mid0 <= mid1 {
            out.append([.set(ByteSet(mid0...mid1))] + [GrammarBuilder.Symbol](repeating: .set(SchemaCompiler.digit), count: n - 1))
        }
        return out + upper
    }

    // MARK: Objects

    mutating func compileObject(_ o: JSONObject, _ path: String) throws -> Int {
        var props: [(key: String, schema: JSONValue)] = []
        if let p = o["properties"] {
            guard let po = p.objectValue else { throw invalid(path, "'properties' must be an object, found \(p.typeName)") }
            for (k, v) in po { props.append((k, v)) }
        }
        var required = Set<[UInt8]>()   // bytes: "e\u0301" is not the property "\u00e9"
        if let r = o["required"] {
            guard let list = r.arrayValue else { throw invalid(path, "'required' must be an array of strings, found \(r.typeName)") }
            for x in list {
                guard let s = x.stringValue else { throw invalid(path, "'required' entries must be strings, found \(x.typeName)") }
                required.insert(Array(s.utf8))
            }
        }
        var extra: JSONValue? = nil  // schema of additional properties; nil = none allowed
        switch o["additionalProperties"] {
        case nil, .bool(false)?: extra = nil
        case .bool(true)?: extra = .bool(true)
        case .object(let s)?: extra = .object(s)
        case let other?: throw invalid(path, "'additionalProperties' must be a boolean or a schema, found \(other.typeName)")
        }
        let missing = required.subtracting(props.map { Array($0.key.utf8) }).sorted { $0.lexicographicallyPrecedes($1) }
            .map { String(decoding: $0, as: UTF8.self) }
        if !missing.isEmpty {
            if o["additionalProperties"] == .bool(false) {
                throw invalid(path, "required property \"\(missing[0])\" is not in 'properties' and 'additionalProperties' is false")
            }
            for k in missing { props.append((k, extra ?? .bool(true))) }
        }
        if let minP = try count(o, "minProperties", path), minP > required.count {
            throw unsupported(path, "'minProperties' greater than the number of required properties is not supported")
        }
        if let maxP = try count(o, "maxProperties", path), extra != nil || maxP < props.count {
            throw unsupported(path, "'maxProperties' below the number of possible properties is not supported")
        }

        let ws = self.ws
        let comma: Seq = [.rule(ws), .byte(UInt8(ascii: ",")), .rule(ws)]
        var values: [Int] = []
        for (k, s) in props {
            values.append(try compile(s, "\(path)/properties/\(SchemaCompiler.pointerEscape(k))"))
        }
        // Tail after the declared properties: extra properties, then "}".
        let close: Seq = [.rule(ws), .byte(UInt8(ascii: "}"))]
        var tailFirst: Int, tailMore: Int
        if let extra {
            let value = try compile(extra, "\(path)/additionalProperties")
            let key = freeKey(excluding: props.map { $0.key })
            let kv: Seq = [.rule(key), .rule(ws), .byte(UInt8(ascii: ":")), .rule(ws), .rule(value)]
            let loop = g.declare("extra-props")
            g.define(loop, [close, comma + kv + [.rule(loop)]])
            tailFirst = g.rule("props-end", [[.byte(UInt8(ascii: "}"))], kv + [.rule(loop)]])
            tailMore = loop
        } else {
            tailFirst = g.rule("props-end", [[.byte(UInt8(ascii: "}"))]])
            tailMore = g.rule("props-end", [close])
        }
        // Backwards: first_i / more_i = the properties from i on, with nothing / something before.
        for i in stride(from: props.count - 1, through: 0, by: -1) {
            let keyText = JSONValue.string(props[i].key).serialized()
            let kv: Seq = GrammarBuilder.literal(keyText) + [.rule(ws), .byte(UInt8(ascii: ":")), .rule(ws), .rule(values[i])]
            let isRequired = required.contains(Array(props[i].key.utf8))
            var firstAlts: [Seq] = [kv + [.rule(tailMore)]]
            var moreAlts: [Seq] = [comma + kv + [.rule(tailMore)]]
            if !isRequired {
                firstAlts.append([.rule(tailFirst)])
                moreAlts.append([.rule(tailMore)])
            }
            let f = g.rule("props", firstAlts)
            let m = g.rule("props", moreAlts)
            tailFirst = f
            tailMore = m
        }
        return g.rule("object", [GrammarBuilder.literal("{") + [.rule(ws), .rule(tailFirst)]])
    }

    /// A quoted key without escapes that differs from every key in `excluded` (a trie over their
    /// characters: at each node the string may end unless it spells an excluded key, continue along the
    /// trie, or leave it with a character no excluded key has there).
    mutating func freeKey(excluding excluded: [String]) -> Int {
        let plain = SchemaCompiler.plainASCII
        let mbAll = utf8Multibyte(leads: ByteSet(0xC2...0xF4))
        let rest = g.declare("key-rest")  // plain* (utf8 plain*)* "\""
        let restTail = g.rule("key-rest-tail", [[.byte(0x22)], [.rule(mbAll), .rule(rest)]])
        g.define(rest, [[.star(plain), .rule(restTail)]])
        // Keys as unicode scalars, with a backslash or quote making the key impossible to collide with.
        let keys = excluded.map { Array($0.unicodeScalars) }
        func node(_ prefix: [Unicode.Scalar]) -> Int {
            let matching = keys.filter { $0.count >= prefix.count && Array($0[0..<prefix.count]) == prefix }
            var nexts: [Unicode.Scalar] = []
            for k in matching where k.count > prefix.count && !nexts.contains(k[prefix.count]) { nexts.append(k[prefix.count]) }
            var alts: [Seq] = []
            if !matching.contains(where: { $0.count == prefix.count }) { alts.append([.byte(0x22)]) }
            var blockedASCII = ByteSet(), blockedLeads = ByteSet()
            for s in nexts {
                let bytes = Array(String(s).utf8)
                if s.value < 0x80 { blockedASCII.insert(bytes[0]) } else { blockedLeads.insert(bytes[0]) }
                if s == "\"" || s == "\\" || s.value < 0x20 { continue }  // such keys need escapes: never equal
                alts.append(GrammarBuilder.literal(bytes) + [.rule(node(prefix + [s]))])
            }
            let plainOut = plain.subtracting(blockedASCII)
            if !plainOut.isEmpty { alts.append([.set(plainOut), .rule(rest)]) }
            let leads = ByteSet(0xC2...0xF4).subtracting(blockedLeads)
            if !leads.isEmpty { alts.append([.rule(utf8Multibyte(leads: leads)), .rule(rest)]) }
            return g.rule("key", alts)
        }
        let start = node([])
        return g.rule("key", [[.byte(0x22), .rule(start)]])
    }

    // MARK: Arrays

    mutating func compileArray(_ o: JSONObject, _ path: String) throws -> Int {
        var prefix: [Int] = []
        var rest: Int? = nil
        func itemsSchema(_ v: JSONValue, _ p: String) throws -> Int? {
            if v == .bool(false) { return nil }
            return try compile(v, p)
        }
        if let pi = o["prefixItems"] {
            guard let list = pi.arrayValue else { throw invalid(path, "'prefixItems' must be an array of schemas, found \(pi.typeName)") }
            for (i, s) in list.enumerated() { prefix.append(try compile(s, "\(path)/prefixItems/\(i)")) }
            rest = try o["items"].map { try itemsSchema($0, "\(path)/items") } ?? anyValue
        } else if case .array(let list)? = o["items"] {
            for (i, s) in list.enumerated() { prefix.append(try compile(s, "\(path)/items/\(i)")) }
            rest = try o["additionalItems"].map { try itemsSchema($0, "\(path)/additionalItems") } ?? anyValue
        } else {
            rest = try o["items"].map { try itemsSchema($0, "\(path)/items") } ?? anyValue
        }
        let minItems = try count(o, "minItems", path) ?? 0
        let maxItems = try count(o, "maxItems", path)
        if let maxItems, maxItems < minItems { throw invalid(path, "'minItems' \(minItems) is greater than 'maxItems' \(maxItems)") }
        if (maxItems ?? minItems) > SchemaCompiler.maxRepeat || prefix.count > SchemaCompiler.maxRepeat {
            throw unsupported(path, "array lengths above \(SchemaCompiler.maxRepeat) cannot be enforced")
        }
        let ws = self.ws
        let comma: Seq = [.rule(ws), .byte(UInt8(ascii: ",")), .rule(ws)]
        func item(_ j: Int) -> Int? { j < prefix.count ? prefix[j] : rest }
        func end(_ j: Int) -> Seq { j == 0 ? [.byte(UInt8(ascii: "]"))] : [.rule(ws), .byte(UInt8(ascii: "]"))] }
        func sep(_ j: Int) -> Seq { j == 0 ? [] : comma }
        // state_j: j items written so far. Built backwards from the last distinct state.
        var top: Int
        var next: Int
        if let maxItems {
            top = rest == nil ? Swift.min(maxItems, prefix.count) : maxItems
            if top < minItems { throw invalid(path, "'minItems' \(minItems) but at most \(top) items are allowed") }
            next = g.rule("array-end", [end(top)])
        } else {
            top = Swift.max(minItems, prefix.count, 1)
            if let r = item(top) {
                let loop = g.declare("array-items")
                g.define(loop, [end(top), sep(top) + [.rule(r), .rule(loop)]])
                next = loop
            } else {
                if top < minItems { throw invalid(path, "'minItems' \(minItems) but at most \(prefix.count) items are allowed") }
                next = g.rule("array-end", [end(top)])
            }
        }
        var j = top - 1
        while j >= 0 {
            var alts: [Seq] = []
            if j >= minItems { alts.append(end(j)) }
            if let r = item(j) { alts.append(sep(j) + [.rule(r), .rule(next)]) }
            if alts.isEmpty { throw invalid(path, "'minItems' \(minItems) but at most \(j) items are allowed") }
            next = g.rule("array-items", alts)
            j -= 1
        }
        return g.rule("array", [GrammarBuilder.literal("[") + [.rule(ws), .rule(next)]])
    }
}
