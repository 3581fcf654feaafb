/// A JSON document as a value. Objects keep their key order (chat templates and round trips depend on it);
/// integers and floating-point numbers stay distinct so that `1` is written back as `1`, not `1.0`.
package enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    package var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    package var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    package var arrayValue: [JSONValue]? { if case .array(let a) = self { return a } else { return nil } }
    package var objectValue: JSONObject? { if case .object(let o) = self { return o } else { return nil } }
    package var isNull: Bool { self == .null }

    /// Strings are equal when their code points are (RFC 8259 §8.3, as Python and JavaScript compare), not
    /// under Swift's canonical equivalence: "\u00e9" and "e\u0301" are two strings, and two keys.
    package static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.int(let x), .int(let y)): return x == y
        case (.double(let x), .double(let y)): return x == y
        case (.string(let x), .string(let y)): return sameCodePoints(x, y)
        case (.array(let x), .array(let y)): return x == y
        case (.object(let x), .object(let y)): return x == y
        default: return false
        }
    }

    /// The number as a Double, for either numeric case.
    package var doubleValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    /// The number as an Int64 when it is integral and in range.
    package var intValue: Int64? {
        switch self {
        case .int(let i): return i
        case .double(let d):
            guard d.rounded() == d, d >= -9.2e18, d <= 9.2e18 else { return nil }
            return Int64(d)
        default: return nil
        }
    }

    /// `value["key"]` on an object, nil otherwise.
    package subscript(key: String) -> JSONValue? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    /// A short name for error messages: "a string", "an object", ...
    package var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .int, .double: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}

/// An ordered JSON object. Duplicate keys are not allowed (the parser rejects them; `set` replaces). Keys
/// are the same key when their code points are (`sameCodePoints`).
package struct JSONObject: Equatable, Sendable, Sequence {
    package private(set) var entries: [(key: String, value: JSONValue)] = []

    package init() {}
    package init(_ entries: [(String, JSONValue)]) {
        for (k, v) in entries { set(k, v) }
    }

    package var count: Int { entries.count }
    package var isEmpty: Bool { entries.isEmpty }
    package var keys: [String] { entries.map { $0.key } }

    package subscript(key: String) -> JSONValue? {
        get {
            for e in entries where sameCodePoints(e.key, key) { return e.value }
            return nil
        }
        set {
            if let v = newValue { set(key, v) } else { entries.removeAll { sameCodePoints($0.key, key) } }
        }
    }

    package mutating func set(_ key: String, _ value: JSONValue) {
        if let i = entries.firstIndex(where: { sameCodePoints($0.key, key) }) {
            entries[i].value = value
        } else {
            entries.append((key, value))
        }
    }

    package func makeIterator() -> IndexingIterator<[(key: String, value: JSONValue)]> {
        entries.makeIterator()
    }

    package static func == (a: JSONObject, b: JSONObject) -> Bool {
        guard a.entries.count == b.entries.count else { return false }
        for (x, y) in zip(a.entries, b.entries) where !sameCodePoints(x.key, y.key) || x.value != y.value { return false }
        return true
    }
}

/// Equal UTF-8 bytes, i.e. equal code points (Swift's `==` on String is canonical equivalence).
package func sameCodePoints(_ a: String, _ b: String) -> Bool {
    a.utf8.count == b.utf8.count && a.utf8.elementsEqual(b.utf8)
}
