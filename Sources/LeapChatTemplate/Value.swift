// Runtime values of the template language, with Python's semantics (what jinja2 templates see).
import LeapJSON

/// A template value. Lists, tuples and dicts are immutable in the sandbox, so value semantics match
/// Python; namespaces are the one mutable object and are shared by reference.
enum Value {
    case undefined(Undefined)
    case none
    case bool(Bool)
    case int(Int)
    case float(Double)
    case string(String)
    /// markupsafe's `Markup` (from `safe`/`escape`): a string that escapes plain strings added to it.
    case markup(String)
    case list([Value])
    case tuple([Value])
    case dict(PyDict)
    /// A one-shot iterator (what jinja2's map/select/reverse... return): always truthy, has no len().
    case iterator(kind: String, items: [Value])
    /// `range(...)`: a sequence (len, indexing, truthiness by length) that prints as `range(0, 3)`.
    case range(start: Int, stop: Int, step: Int, items: [Value])
    case namespace(Namespace)
    case callable(Callable)
    case loop(LoopState)
}

/// jinja2's default `Undefined`: prints as "", iterates as empty, raises on attribute access or use in
/// arithmetic. `hint` is the message jinja2 would raise with.
struct Undefined {
    var hint: String
    /// True for the sandbox's "unsafe attribute" undefined, which raises a SecurityError when called.
    var unsafe: Bool = false

    static func named(_ name: String) -> Undefined { Undefined(hint: "'\(name)' is undefined") }
    static func noAttribute(_ obj: Value, _ attr: String) -> Undefined {
        Undefined(hint: "'\(obj.pythonTypeName) object' has no attribute '\(attr)'")
    }
    static func noItem(_ obj: Value, _ key: Value) -> Undefined {
        Undefined(hint: "\(obj.pythonTypeName) object has no element \(key.repr)")
    }
}

/// An insertion-ordered dict with Python key equality (1 == 1.0 == True).
struct DictEntry {
    var key: Value
    var value: Value
}

struct PyDict {
    var entries: [DictEntry] = []

    init() {}
    init(_ entries: [(Value, Value)]) { for (k, v) in entries { self[k] = v } }

    var count: Int { entries.count }

    subscript(key: Value) -> Value? {
        get {
            if case .string(let s) = key { return self[string: s] }
            for e in entries where pyEquals(e.key, key) { return e.value }
            return nil
        }
        set {
            if let i = entries.firstIndex(where: { pyEquals($0.key, key) }) {
                if let v = newValue { entries[i].value = v } else { entries.remove(at: i) }
            } else if let v = newValue {
                entries.append(DictEntry(key: key, value: v))
            }
        }
    }

    /// Python's str keys: equal code points (Swift's == would take "e\u{301}" for "\u{e9}").
    subscript(string key: String) -> Value? {
        for e in entries { if case .string(let k) = e.key, k.utf8.count == key.utf8.count, k.utf8.elementsEqual(key.utf8) { return e.value } }
        return nil
    }
}

/// `namespace(...)`: the only object whose attributes a template may assign.
final class Namespace {
    var attributes = PyDict()
    init(_ attributes: PyDict) { self.attributes = attributes }
}

/// Something a template can call.
indirect enum Callable {
    case macro(Macro)
    case method(receiver: Value, name: String)  // e.g. "abc".split
    case global(String)  // range, namespace, dict, raise_exception, strftime_now
    case loopMethod(LoopState, String)  // loop.cycle, loop.changed
    case joiner(Joiner)
}

/// `joiner(sep)`: returns "" on its first call and `sep` afterwards.
final class Joiner {
    let separator: String
    var used = false
    init(_ separator: String) { self.separator = separator }
}

/// A macro closes over the scope it was defined in (jinja2 resolves outer names at call time). That scope
/// usually holds the macro itself (a reference cycle), so the interpreter cuts `scope` and `caller` when
/// the render ends (`Interpreter.releaseMacros`).
final class Macro {
    let name: String
    let parameters: [(name: String, defaultValue: Expr?)]
    let body: [Stmt]
    var scope: Scope?
    let usesCaller: Bool
    let usesVarargs: Bool
    let usesKwargs: Bool
    var caller: Macro? = nil

    init(name: String, parameters: [(name: String, defaultValue: Expr?)], body: [Stmt], scope: Scope,
         usesCaller: Bool, usesVarargs: Bool, usesKwargs: Bool) {
        self.name = name
        self.parameters = parameters
        self.body = body
        self.scope = scope
        self.usesCaller = usesCaller
        self.usesVarargs = usesVarargs
        self.usesKwargs = usesKwargs
    }
}

/// The `loop` variable of a for loop.
final class LoopState {
    let items: [Value]
    var index0 = 0
    var lastChanged: [Value]? = nil
    init(items: [Value]) { self.items = items }

    func attribute(_ name: String) -> Value? {
        let n = items.count
        switch name {
        case "index": return .int(index0 + 1)
        case "index0": return .int(index0)
        case "revindex": return .int(n - index0)
        case "revindex0": return .int(n - index0 - 1)
        case "first": return .bool(index0 == 0)
        case "last": return .bool(index0 == n - 1)
        case "length": return .int(n)
        case "depth": return .int(1)
        case "depth0": return .int(0)
        case "previtem":
            return index0 > 0 ? items[index0 - 1] : .undefined(Undefined(hint: "there is no previous item"))
        case "nextitem":
            return index0 + 1 < n ? items[index0 + 1] : .undefined(Undefined(hint: "there is no next item"))
        case "cycle", "changed": return .callable(.loopMethod(self, name))
        default: return nil
        }
    }
}

// MARK: - Python semantics

extension Value {
    /// Python's `type(x).__name__`, used in error messages.
    var pythonTypeName: String {
        switch self {
        case .undefined: return "Undefined"
        case .none: return "NoneType"
        case .bool: return "bool"
        case .int: return "int"
        case .float: return "float"
        case .string: return "str"
        case .markup: return "Markup"
        case .list: return "list"
        case .tuple: return "tuple"
        case .dict: return "dict"
        case .iterator(let kind, _): return kind
        case .range: return "range"
        case .namespace: return "Namespace"
        case .callable(let c):
            switch c {
            case .macro: return "Macro"
            case .method: return "builtin_function_or_method"
            case .global: return "function"
            case .loopMethod: return "method"
            case .joiner: return "Joiner"
            }
        case .loop: return "LoopContext"
        }
    }

    /// An int (or bool) usable as a sequence index.
    var indexValue: Int? {
        switch self {
        case .int(let i): return i
        case .bool(let b): return b ? 1 : 0
        default: return nil
        }
    }

    /// Markup seen as the str it subclasses.
    var plain: Value { if case .markup(let s) = self { return .string(s) } else { return self } }
    var isMarkup: Bool { if case .markup = self { return true } else { return false } }

    var isContainer: Bool {
        switch self {
        case .list, .tuple, .dict, .iterator, .range: return true
        default: return false
        }
    }

    var isUndefined: Bool { if case .undefined = self { return true } else { return false } }

    /// Python truthiness.
    var truthy: Bool {
        switch self {
        case .undefined, .none: return false
        case .bool(let b): return b
        case .int(let i): return i != 0
        case .float(let d): return d != 0
        case .string(let s), .markup(let s): return !s.isEmpty
        case .list(let a), .tuple(let a), .range(_, _, _, let a): return !a.isEmpty
        case .dict(let d): return d.count > 0
        case .namespace, .callable, .loop, .iterator: return true
        }
    }

    /// `str(x)` as jinja2 prints it.
    var str: String {
        switch self {
        case .undefined: return ""
        case .string(let s), .markup(let s): return s
        default: return repr
        }
    }

    /// Python's `repr(x)`. Output stops growing past `reprLimit` bytes (the caller's output limit then
    /// rejects it) and namespaces nested in themselves print as `...`, so it always terminates.
    var repr: String {
        var out = ""
        writeRepr(to: &out, depth: 0)
        return out
    }

    static let reprLimit = (64 << 20) + 1

    func writeRepr(to out: inout String, depth: Int) {
        if out.utf8.count > Value.reprLimit { return }
        if depth > ValueBounds.maxDepth + 8 { out += "..."; return }
        func items(_ a: [Value], _ open: String, _ close: String) {
            out += open
            for (i, x) in a.enumerated() {
                if i > 0 { out += ", " }
                x.writeRepr(to: &out, depth: depth + 1)
                if out.utf8.count > Value.reprLimit { return }
            }
            out += close
        }
        switch self {
        case .undefined: out += "Undefined"
        case .none: out += "None"
        case .bool(let b): out += b ? "True" : "False"
        case .int(let i): out += String(i)
        case .float(let d): out += pyFloatRepr(d)
        case .string(let s): out += pyStringRepr(s)
        case .markup(let s): out += "Markup(" + pyStringRepr(s) + ")"
        case .list(let a): items(a, "[", "]")
        case .tuple(let a): items(a, "(", a.count == 1 ? ",)" : ")")
        case .dict(let d):
            out += "{"
            for (i, e) in d.entries.enumerated() {
                if i > 0 { out += ", " }
                e.key.writeRepr(to: &out, depth: depth + 1)
                out += ": "
                e.value.writeRepr(to: &out, depth: depth + 1)
                if out.utf8.count > Value.reprLimit { return }
            }
            out += "}"
        case .iterator(let kind, _): out += "<\(kind) object>"
        case .range(let start, let stop, let step, _): out += "range(\(start), \(stop)\(step == 1 ? "" : ", \(step)"))"
        case .namespace(let ns):
            out += "<Namespace "
            Value.dict(ns.attributes).writeRepr(to: &out, depth: depth + 1)
            out += ">"
        case .callable(let c):
            switch c {
            case .macro(let m): out += "<Macro '\(m.name)'>"
            case .method(let r, let n): out += "<built-in method \(n) of \(r.pythonTypeName) object>"
            case .global(let n): out += "<function \(n)>"
            case .loopMethod(_, let n): out += "<bound method LoopContext.\(n)>"
            case .joiner: out += "<Joiner>"
            }
        case .loop(let l): out += "<LoopContext \(l.index0 + 1)/\(l.items.count)>"
        }
    }

    /// Conversion from JSON (the context handed in by the caller).
    init(json: JSONValue) {
        switch json {
        case .null: self = .none
        case .bool(let b): self = .bool(b)
        case .int(let i): self = .int(Int(i))
        case .double(let d): self = .float(d)
        case .string(let s): self = .string(s)
        case .array(let a): self = .list(a.map { Value(json: $0) })
        case .object(let o):
            var d = PyDict()
            for e in o { d.entries.append(DictEntry(key: .string(e.key), value: Value(json: e.value))) }
            self = .dict(d)
        }
    }
}

/// Python's `==`.
func pyEquals(_ x: Value, _ y: Value) -> Bool {
    let a = x.plain, b = y.plain
    switch (a, b) {
    case (.undefined, .undefined), (.none, .none): return true
    // Python compares code points (no Unicode normalization, unlike Swift's ==): equal UTF-8 bytes.
    case (.string(let x), .string(let y)): return x.utf8.count == y.utf8.count && x.utf8.elementsEqual(y.utf8)
    case (.list(let x), .list(let y)), (.tuple(let x), .tuple(let y)), (.range(_, _, _, let x), .range(_, _, _, let y)):
        return x.count == y.count && zip(x, y).allSatisfy { pyEquals($0, $1) }
    case (.dict(let x), .dict(let y)):
        guard x.count == y.count else { return false }
        for e in x.entries {
            guard let v = y[e.key], pyEquals(e.value, v) else { return false }
        }
        return true
    case (.namespace(let x), .namespace(let y)): return x === y
    case (.loop(let x), .loop(let y)): return x === y
    default:
        if let x = a.numeric, let y = b.numeric {
            switch (x, y) {
            case (.int(let i), .int(let j)): return i == j
            default: return x.asDouble == y.asDouble
            }
        }
        return false
    }
}

enum Numeric {
    case int(Int)
    case float(Double)
    var asDouble: Double {
        switch self {
        case .int(let i): return Double(i)
        case .float(let d): return d
        }
    }
}

extension Value {
    /// bool, int and float as a number (Python's bool is an int).
    var numeric: Numeric? {
        switch self {
        case .bool(let b): return .int(b ? 1 : 0)
        case .int(let i): return .int(i)
        case .float(let d): return .float(d)
        default: return nil
        }
    }
}

/// Python's `repr(float)`.
func pyFloatRepr(_ d: Double) -> String {
    if d.isNaN { return "nan" }
    if d.isInfinite { return d < 0 ? "-inf" : "inf" }
    return JSONValue.formatDouble(d)
}

/// Python's `repr(str)`: single quotes unless the text has a ' and no " (code points: a quote followed by a
/// combining mark is one Character, and not a quote).
func pyStringRepr(_ s: String) -> String {
    let useDouble = s.unicodeScalars.contains("'") && !s.unicodeScalars.contains("\"")
    let quote: Unicode.Scalar = useDouble ? "\"" : "'"
    var out = String(quote)
    for c in s.unicodeScalars {
        switch c {
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            if c == quote {
                out += "\\" + String(c)
            } else if c.value < 0x20 || c.value == 0x7F {
                out += "\\x" + hex(c.value, 2)
            } else if c.value < 0x7F || pyIsPrintable(c) {
                out.unicodeScalars.append(c)
            } else if c.value <= 0xFF {
                out += "\\x" + hex(c.value, 2)
            } else if c.value <= 0xFFFF {
                out += "\\u" + hex(c.value, 4)
            } else {
                out += "\\U" + hex(c.value, 8)
            }
        }
    }
    out.unicodeScalars.append(quote)
    return out
}

private func hex(_ v: UInt32, _ width: Int) -> String {
    let s = String(v, radix: 16)
    return String(repeating: "0", count: max(0, width - s.count)) + s
}

/// Python's `str.isprintable()` for one non-ASCII character: not in categories C* or Z* (except space).
func pyIsPrintable(_ c: Unicode.Scalar) -> Bool {
    switch c.properties.generalCategory {
    case .control, .format, .surrogate, .privateUse, .unassigned, .lineSeparator, .paragraphSeparator,
         .spaceSeparator:
        return false
    default: return true
    }
}

/// Python's `str.isspace()` for one character.
func pyIsSpace(_ c: Unicode.Scalar) -> Bool {
    switch c.value {
    case 0x09...0x0D, 0x1C...0x20, 0x85, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000:
        return true
    default: return false
    }
}

// MARK: - Size bounds

/// Bounds on values a template builds, so printing, comparing or serializing them stays cheap and shallow
/// (lists can share sub-lists, so `[x, x]` nested 40 times would otherwise be 2^40 elements to print).
enum ValueBounds {
    /// Above JSONParser.maxDepth, so any JSON input fits.
    static let maxDepth = 600
    /// Elements counted with multiplicity (a shared sub-list counts each time it appears).
    static let maxLogicalSize = 4_000_000

    /// Checks `v` and returns the number of elements visited (the work done, for step counting).
    static func check(_ v: Value) throws -> Int {
        // Fast path: a flat container of scalars (the common literal) needs no traversal state.
        switch v {
        case .list(let a), .tuple(let a):
            if a.allSatisfy({ !$0.isContainer }) { return a.count }
        default: break
        }
        var memo: [UnsafeRawPointer: (depth: Int, size: Int)] = [:]
        var visited = 0
        let (depth, size) = measure(v, &memo, &visited)
        if depth > maxDepth { throw TemplateFailure("value nests deeper than \(maxDepth) levels") }
        if size > maxLogicalSize { throw TemplateFailure("value has more than \(maxLogicalSize) elements") }
        return visited
    }

    /// (depth, logical size), visiting each distinct array buffer once. Recursion depth is bounded because
    /// every child was itself checked (or came from JSON with its own depth limit).
    private static func measure(_ v: Value, _ memo: inout [UnsafeRawPointer: (depth: Int, size: Int)],
                                _ visited: inout Int) -> (Int, Int) {
        func items(_ a: [Value]) -> (Int, Int) {
            guard let key = a.withUnsafeBufferPointer({ $0.baseAddress.map { UnsafeRawPointer($0) } }) else { return (1, 1) }
            if let m = memo[key] { return m }
            visited += a.count
            var depth = 0, size = 1
            for x in a {
                let (d, s) = measure(x, &memo, &visited)
                depth = max(depth, d)
                size = min(size + s, Int.max / 2)
            }
            memo[key] = (depth + 1, size)
            return (depth + 1, size)
        }
        switch v {
        case .list(let a), .tuple(let a), .iterator(_, let a), .range(_, _, _, let a): return items(a)
        case .dict(let d):
            guard let key = d.entries.withUnsafeBufferPointer({ $0.baseAddress.map { UnsafeRawPointer($0) } }) else { return (1, 1) }
            if let m = memo[key] { return m }
            visited += d.entries.count
            var depth = 0, size = 1
            for e in d.entries {
                let (d1, s1) = measure(e.key, &memo, &visited)
                let (d2, s2) = measure(e.value, &memo, &visited)
                depth = max(depth, d1, d2)
                size = min(size + s1 + s2, Int.max / 2)
            }
            memo[key] = (depth + 1, size)
            return (depth + 1, size)
        default: return (1, 1)
        }
    }
}
