import LeapJSON

/// Follows constrained output (a prefix of a JSON document the grammar already checked) and tells
/// whether more bytes would close an object key equal to one the same object already has.
///
/// A grammar cannot compare free-form keys (additional properties, objects of the empty schema) with each
/// other, so the schema grammar alone would let `{"a":1,"a":2}` through; the generation loop asks this
/// tracker before accepting a sampled token and draws another one when the answer is no. Keys are compared
/// decoded (`"a"` equals `"\u0061"`), as JSON parsers compare them.
package struct JSONKeyTracker: Sendable {
    private enum Container: Sendable {
        case array
        /// Keys seen so far (decoded, as UTF-8) and whether the next string is a key.
        case object(keys: Set<[UInt8]>, expectingKey: Bool)
    }

    private var stack: [Container] = []
    private var inString = false
    private var escaped = false
    private var stringIsKey = false
    /// The raw bytes of the key being read (between the quotes, escapes undecoded).
    private var key: [UInt8] = []

    package init() {}

    /// Whether `bytes` can follow without repeating a key (the tracker is unchanged).
    package func allows<C: Collection>(_ bytes: C) -> Bool where C.Element == UInt8 {
        var copy = self
        return copy.accept(bytes)
    }

    /// Takes `bytes`; returns false (and stops at that byte) when they close a key the enclosing object
    /// already has.
    @discardableResult
    package mutating func accept<C: Collection>(_ bytes: C) -> Bool where C.Element == UInt8 {
        for b in bytes where !step(b) { return false }
        return true
    }

    private mutating func step(_ b: UInt8) -> Bool {
        if inString {
            if escaped {
                escaped = false
            } else if b == UInt8(ascii: "\\") {
                escaped = true
            } else if b == UInt8(ascii: "\"") {
                inString = false
                if stringIsKey { return addKey() }
                return true
            }
            if stringIsKey { key.append(b) }
            return true
        }
        switch b {
        case UInt8(ascii: "{"): stack.append(.object(keys: [], expectingKey: true))
        case UInt8(ascii: "["): stack.append(.array)
        case UInt8(ascii: "}"), UInt8(ascii: "]"): _ = stack.popLast()
        case UInt8(ascii: "\""):
            inString = true
            if case .object(_, true)? = stack.last { stringIsKey = true } else { stringIsKey = false }
            key.removeAll(keepingCapacity: true)
        case UInt8(ascii: ":"): setExpectingKey(false)
        case UInt8(ascii: ","): setExpectingKey(true)
        default: break  // numbers, literals, whitespace
        }
        return true
    }

    private mutating func setExpectingKey(_ expecting: Bool) {
        if case .object(let keys, _)? = stack.last { stack[stack.count - 1] = .object(keys: keys, expectingKey: expecting) }
    }

    /// Records the key just closed; false when the object already has it.
    private mutating func addKey() -> Bool {
        guard case .object(var keys, let expecting)? = stack.last else { return true }
        let decoded: [UInt8]
        if key.contains(UInt8(ascii: "\\")), case .string(let s)? = try? JSONParser.parse(String(decoding: [UInt8(ascii: "\"")] + key + [UInt8(ascii: "\"")], as: UTF8.self)) {
            decoded = Array(s.utf8)
        } else {
            decoded = key
        }
        stack[stack.count - 1] = .array  // drop our reference so the set is mutated in place
        let fresh = keys.insert(decoded).inserted
        stack[stack.count - 1] = .object(keys: keys, expectingKey: expecting)
        return fresh
    }
}
