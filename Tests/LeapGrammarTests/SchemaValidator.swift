import LeapJSON

/// A small JSON Schema validator (the subset LeapGrammar compiles), written from the specification's
/// semantics rather than the grammar's policy: e.g. absent `additionalProperties` allows extra keys,
/// property order does not matter, `oneOf` needs exactly one match. Returns the first violation found.
struct SchemaValidator {
    let root: JSONValue

    func validate(_ v: JSONValue) -> String? { check(v, root, "$") }

    /// RFC 6901 on bytes (a "/" followed by a combining mark is one Character, and still a "/").
    func resolve(_ ref: String) -> JSONValue? {
        guard ref.utf8.first == UInt8(ascii: "#") else { return nil }
        var cur = root
        for raw in Array(ref.utf8).dropFirst().split(separator: UInt8(ascii: "/")) {
            let key = String(decoding: raw, as: UTF8.self).replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            if case .object(let o) = cur, let n = o[key] { cur = n } else { return nil }
        }
        return cur
    }

    static func numbersEqual(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.array(let x), .array(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { numbersEqual($0, $1) }
        case (.object(let x), .object(let y)):
            return x.count == y.count && x.allSatisfy { e in y[e.key].map { numbersEqual(e.value, $0) } ?? false }
        default:
            if let p = a.doubleValue, let q = b.doubleValue { return p == q }
            return a == b
        }
    }

    static func hasType(_ v: JSONValue, _ t: String) -> Bool {
        switch t {
        case "null": return v == .null
        case "boolean": return v.boolValue != nil
        case "string": return v.stringValue != nil
        case "array": return v.arrayValue != nil
        case "object": return v.objectValue != nil
        case "number": return v.doubleValue != nil
        case "integer":
            if case .int = v { return true }
            if case .double(let d) = v { return d.rounded() == d }
            return false
        default: return false
        }
    }

    func check(_ v: JSONValue, _ schema: JSONValue, _ at: String) -> String? {
        if schema == .bool(true) { return nil }
        guard case .object(let s) = schema else { return "\(at): schema false" }
        if let ref = s["$ref"]?.stringValue {
            guard let target = resolve(ref) else { return "\(at): unresolved \(ref)" }
            if let e = check(v, target, at) { return e }
        }
        if let all = s["allOf"]?.arrayValue {
            for sub in all { if let e = check(v, sub, at) { return e } }
        }
        if let any = s["anyOf"]?.arrayValue {
            let nullable = s["nullable"]?.boolValue == true && v == .null
            if !nullable && !any.contains(where: { check(v, $0, at) == nil }) { return "\(at): no anyOf branch matches" }
        }
        if let one = s["oneOf"]?.arrayValue {
            let n = one.filter { check(v, $0, at) == nil }.count
            if n != 1 { return "\(at): \(n) oneOf branches match" }
        }
        if let c = s["const"], !SchemaValidator.numbersEqual(c, v) { return "\(at): not the const" }
        if let e = s["enum"]?.arrayValue, !e.contains(where: { SchemaValidator.numbersEqual($0, v) }) {
            return "\(at): not in enum"
        }
        var types: [String] = []
        if let t = s["type"]?.stringValue { types = [t] }
        if let t = s["type"]?.arrayValue { types = t.compactMap { $0.stringValue } }
        if s["nullable"]?.boolValue == true && !types.isEmpty { types.append("null") }
        if !types.isEmpty && !types.contains(where: { SchemaValidator.hasType(v, $0) }) {
            return "\(at): \(v.typeName) is not \(types)"
        }
        switch v {
        case .string(let str):
            let n = str.unicodeScalars.count
            if let m = s["minLength"]?.intValue, n < m { return "\(at): shorter than \(m)" }
            if let m = s["maxLength"]?.intValue, n > m { return "\(at): longer than \(m)" }
        case .int, .double:
            let d = v.doubleValue ?? 0
            if let m = s["minimum"]?.doubleValue, d < m { return "\(at): \(d) < minimum \(m)" }
            if let m = s["maximum"]?.doubleValue, d > m { return "\(at): \(d) > maximum \(m)" }
            if let m = s["exclusiveMinimum"]?.doubleValue, d <= m { return "\(at): \(d) <= exclusiveMinimum \(m)" }
            if let m = s["exclusiveMaximum"]?.doubleValue, d >= m { return "\(at): \(d) >= exclusiveMaximum \(m)" }
        case .array(let items):
            if let m = s["minItems"]?.intValue, items.count < m { return "\(at): fewer than \(m) items" }
            if let m = s["maxItems"]?.intValue, items.count > m { return "\(at): more than \(m) items" }
            let prefix = s["prefixItems"]?.arrayValue ?? []
            for (i, item) in items.enumerated() {
                let sub: JSONValue? = i < prefix.count ? prefix[i] : s["items"]
                if let sub, let e = check(item, sub, "\(at)[\(i)]") { return e }
            }
        case .object(let o):
            let props = s["properties"]?.objectValue ?? JSONObject()
            for r in s["required"]?.arrayValue ?? [] {
                if let k = r.stringValue, o[k] == nil { return "\(at): missing required \"\(k)\"" }
            }
            for (k, value) in o {
                if let ps = props[k] {
                    if let e = check(value, ps, "\(at).\(k)") { return e }
                } else if let extra = s["additionalProperties"] {
                    if let e = check(value, extra, "\(at).\(k)") { return "\(e) (additional property)" }
                }
            }
        default:
            break
        }
        return nil
    }
}

extension String {
    /// On bytes: "~1" followed by a combining mark is not a Character "1", but it is "~1".
    func replacingOccurrences(of a: String, with b: String) -> String {
        let s = Array(utf8), n = Array(a.utf8)
        var out: [UInt8] = []
        var i = 0
        while i < s.count {
            if !n.isEmpty && s[i...].starts(with: n) { out += b.utf8; i += n.count } else { out.append(s[i]); i += 1 }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Parses and validates; nil when the text is a valid document.
func documentError(_ text: [UInt8], _ schema: JSONValue) -> String? {
    let v: JSONValue
    do {
        v = try JSONParser.parse(bytes: text)
    } catch {
        return "parse: \(error)"
    }
    return SchemaValidator(root: schema).validate(v)
}
