// jinja2's builtin filters (plus transformers' `tojson`), with jinja2's argument names and defaults.
import Glibc
import LeapJSON

enum Filters {
    static let known: Set<String> = [
        "abs", "attr", "batch", "capitalize", "center", "count", "d", "default", "dictsort", "e", "escape", "first",
        "float", "forceescape", "format", "indent", "int", "join", "last", "length", "list", "lower", "items",
        "map", "min", "max", "reject", "rejectattr", "replace", "reverse", "round", "safe", "select",
        "selectattr", "sort", "string", "striptags", "sum", "title", "trim", "truncate", "unique", "upper",
        "wordcount", "tojson", "pprint", "groupby", "slice", "filesizeformat", "urlencode", "urlize", "wordwrap",
        "xmlattr", "random",
    ]

    static func soft(_ v: Value) -> String { v.str }

    /// Filters that return Markup when given Markup (they run str methods on it).
    static let markupPreserving: Set<String> = [
        "trim", "string", "upper", "lower", "capitalize", "title", "center", "indent", "safe", "e", "escape",
        "forceescape", "first", "last",
    ]

    static func apply(_ name: String, _ input: Value, _ args: [Value], _ kwargs: [(String, Value)],
                      _ interp: Interpreter) throws -> Value
    {
        if case .markup(let s) = input {
            if name == "safe" || name == "e" || name == "escape" { return input }
            let r = try applyPlain(name, .string(s), args, kwargs, interp)
            if markupPreserving.contains(name), case .string(let t) = r { return .markup(t) }
            return r
        }
        return try applyPlain(name, input, args, kwargs, interp)
    }

    static func applyPlain(_ name: String, _ v: Value, _ args: [Value], _ kwargs: [(String, Value)],
                           _ interp: Interpreter) throws -> Value
    {
        func bind(_ names: [String]) throws -> Arguments { try Arguments(name, names, args, kwargs) }
        switch name {
        case "tojson":
            let a = try bind(["ensure_ascii", "indent", "separators", "sort_keys"])
            return .string(try toJSON(v, ensureASCII: a.bool(0) ?? false, indent: a[1], separators: a[2],
                                      sortKeys: a.bool(3) ?? false))
        case "trim":
            let a = try bind(["chars"])
            return .string(Methods.strip(soft(v), try a.string(0, "chars"), left: true, right: true))
        case "length", "count":
            _ = try bind([])
            return .int(try length(v))
        case "string":
            _ = try bind([])
            return .string(soft(v))
        case "safe", "e", "escape", "forceescape":
            _ = try bind([])
            if name == "safe" { return .markup(soft(v)) }
            return .markup(escapeHTML(soft(v)))
        case "upper": _ = try bind([]); return .string(soft(v).uppercased())
        case "lower": _ = try bind([]); return .string(soft(v).lowercased())
        case "capitalize": _ = try bind([]); return .string(Methods.capitalize(soft(v)))
        case "title": _ = try bind([]); return .string(title(soft(v)))
        case "default", "d":
            let a = try bind(["default_value", "boolean"])
            if v.isUndefined || ((a.bool(1) ?? false) && !v.truthy) { return a[0] ?? .string("") }
            return v
        case "join":
            let a = try bind(["d", "attribute"])
            var items = try interp.iterate(v)
            if let attr = a[1] { items = try items.map { try attribute($0, attr, interp) } }
            return .string(items.map { $0.str }.joined(separator: a[0]?.str ?? ""))
        case "first":
            _ = try bind([])
            return try interp.iterate(v).first ?? .undefined(Undefined(hint: "No first item, sequence was empty."))
        case "last":
            _ = try bind([])
            if case .iterator(let kind, _) = v { throw TemplateFailure("'\(kind)' object is not reversible") }
            return try interp.iterate(v).last ?? .undefined(Undefined(hint: "No last item, sequence was empty."))
        case "list":
            _ = try bind([])
            return .list(try interp.iterate(v))
        case "items":
            _ = try bind([])
            if v.isUndefined { return .list([]) }
            guard case .dict(let d) = v else { throw TemplateFailure("Can only get item pairs from a mapping.") }
            return .iterator(kind: "generator", items: d.entries.map { .tuple([$0.key, $0.value]) })
        case "int":
            let a = try bind(["default", "base"])
            if case .undefined(let u) = v { throw TemplateFailure(u.hint) }
            return toInt(v, a[0] ?? .int(0), try a.int(1, "base") ?? 10)
        case "float":
            let a = try bind(["default"])
            if case .undefined(let u) = v { throw TemplateFailure(u.hint) }
            return toFloat(v) ?? a[0] ?? .float(0)
        case "abs":
            _ = try bind([])
            switch v.numeric {
            case .int(let i)?:
                if i == Int.min { throw TemplateFailure("integer overflow") }
                return .int(abs(i))
            case .float(let d)?: return .float(abs(d))
            case nil: throw TemplateFailure("bad operand type for abs(): '\(v.pythonTypeName)'")
            }
        case "replace":
            let a = try bind(["old", "new", "count"])
            guard let old = a[0], let new = a[1] else { throw TemplateFailure("replace() missing arguments") }
            return .string(Methods.replace(soft(v), old.str, new.str, count: try a.int(2, "count") ?? -1))
        case "indent":
            let a = try bind(["width", "first", "blank"])
            // jinja2 appends "\n" to the value with +=, so anything but a string fails.
            guard case .string = v else {
                if case .undefined(let u) = v { throw TemplateFailure(u.hint) }
                throw TemplateFailure("unsupported operand type(s) for +=: '\(v.pythonTypeName)' and 'str'")
            }
            var indention = "    "
            if let w = a[0] {
                if case .string(let s) = w { indention = s } else if let n = w.indexValue {
                    indention = String(repeating: " ", count: max(0, min(n, 1 << 16)))
                } else {
                    throw TemplateFailure("indent width must be an int or a string")
                }
            }
            return .string(indent(soft(v), indention, first: a.bool(1) ?? false, blank: a.bool(2) ?? false))
        case "center":
            let a = try bind(["width"])
            return .string(Methods.pad(soft(v), min(try a.int(0, "width") ?? 80, 1 << 20), " ", "center"))
        case "wordcount":
            _ = try bind([])
            var count = 0, inWord = false
            for c in soft(v).unicodeScalars {
                let w = c.properties.isAlphabetic || c.properties.numericType != nil || c == "_"
                if w && !inWord { count += 1 }
                inWord = w
            }
            return .int(count)
        case "truncate":
            let a = try bind(["length", "killwords", "end", "leeway"])
            // jinja2 measures the value with len() before any conversion.
            switch v {
            case .string: break
            case .undefined: return v
            case .list, .tuple, .dict:
                let n = try length(v)
                if n <= (try a.int(0, "length") ?? 255) + (try a.int(3, "leeway") ?? 5) { return v }
                throw TemplateFailure("'\(v.pythonTypeName)' object has no attribute 'rsplit'")
            default: throw TemplateFailure("object of type '\(v.pythonTypeName)' has no len()")
            }
            return .string(truncate(soft(v), try a.int(0, "length") ?? 255, a.bool(1) ?? false,
                                    try a.string(2, "end") ?? "...", try a.int(3, "leeway") ?? 5))
        case "format":
            if !kwargs.isEmpty && !args.isEmpty {
                throw TemplateFailure("can't handle positional and keyword arguments at the same time")
            }
            if !kwargs.isEmpty { return .string(try Format.percent(soft(v), .dict(PyDict(kwargs.map { (.string($0.0), $0.1) })))) }
            return .string(try Format.percent(soft(v), .tuple(args)))
        case "round":
            let a = try bind(["precision", "method"])
            let precision = try a.int(0, "precision") ?? 0
            let method = try a.string(1, "method") ?? "common"
            guard let n = v.numeric else { throw TemplateFailure("type \(v.pythonTypeName) doesn't define __round__ method") }
            guard ["common", "ceil", "floor"].contains(method) else {
                throw TemplateFailure("method must be common, ceil or floor")
            }
            // Python's round(int, ndigits >= 0) keeps the int.
            if method == "common", case .int(let i) = n, precision >= 0 { return .int(i) }
            return .float(round(n.asDouble, precision, method))
        case "reverse":
            _ = try bind([])
            if case .string(let s) = v { return .string(Methods.string(s.unicodeScalars.reversed())) }
            switch v {
            case .list(let a): return .iterator(kind: "list_reverseiterator", items: a.reversed())
            case .tuple(let a): return .iterator(kind: "reversed", items: a.reversed())
            case .dict(let d): return .iterator(kind: "dict_reversekeyiterator", items: d.entries.map { $0.key }.reversed())
            default: return .list(try interp.iterate(v).reversed())
            }
        case "unique":
            let a = try bind(["case_sensitive", "attribute"])
            let cs = a.bool(0) ?? false
            var seen: [Value] = []
            var out: [Value] = []
            for item in try interp.iterate(v) {
                var key = try a[1].map { try attribute(item, $0, interp) } ?? item
                if !cs { key = ignoreCase(key) }
                switch key {
                case .list, .dict, .namespace: throw TemplateFailure("unhashable type: '\(key.pythonTypeName)'")
                default: break
                }
                if !seen.contains(where: { pyEquals($0, key) }) {
                    seen.append(key)
                    out.append(item)
                }
            }
            return .iterator(kind: "generator", items: out)
        case "sort":
            let a = try bind(["reverse", "case_sensitive", "attribute"])
            let items = try interp.iterate(v)
            let keys = try items.map { item -> Value in
                var k = try a[2].map { try multiAttribute(item, $0, interp) } ?? item
                if !(a.bool(1) ?? false) { k = ignoreCase(k) }
                return k
            }
            // jinja2's sort keys are one-element lists: equal keys (even two undefined) never reach `<`.
            return .list(try stableSort(items, keys, reverse: a.bool(0) ?? false, equalFirst: true))
        case "dictsort":
            let a = try bind(["case_sensitive", "by", "reverse"])
            guard case .dict(let d) = v else { throw TemplateFailure("'\(v.pythonTypeName)' object has no attribute 'items'") }
            let by = try a.string(1, "by") ?? "key"
            guard by == "key" || by == "value" else {
                throw TemplateFailure("You can only sort by either \"key\" or \"value\"")
            }
            let items = d.entries.map { Value.tuple([$0.key, $0.value]) }
            let keys = d.entries.map { e -> Value in
                let k = by == "key" ? e.key : e.value
                return (a.bool(0) ?? false) ? k : ignoreCase(k)
            }
            return .list(try stableSort(items, keys, reverse: a.bool(2) ?? false))
        case "min", "max":
            let a = try bind(["case_sensitive", "attribute"])
            let items = try interp.iterate(v)
            guard var best = items.first else {
                return .undefined(Undefined(hint: "No aggregated item, sequence was empty."))
            }
            func key(_ x: Value) throws -> Value {
                let k = try a[1].map { try attribute(x, $0, interp) } ?? x
                return (a.bool(0) ?? false) ? k : ignoreCase(k)
            }
            var bestKey = try key(best)
            for item in items.dropFirst() {
                let k = try key(item)
                if name == "min" ? try Ops.less(k, bestKey) : try Ops.less(bestKey, k) {
                    best = item
                    bestKey = k
                }
            }
            return best
        case "sum":
            let a = try bind(["attribute", "start"])
            var total = a[1] ?? .int(0)
            for item in try interp.iterate(v) {
                let x = try a[0].map { try attribute(item, $0, interp) } ?? item
                total = try Ops.binary("+", total, x, interp.limits.maxOutputBytes)
            }
            return total
        case "map":
            // jinja2's map/select/reject skip falsy inputs (None included) instead of iterating them.
            let items = v.truthy ? try interp.iterate(v) : []
            if let attr = kwargs.first(where: { $0.0 == "attribute" })?.1 {
                let dflt = kwargs.first(where: { $0.0 == "default" })?.1
                return .iterator(kind: "generator", items: try items.map { item in
                    let r = try attribute(item, attr, interp)
                    if r.isUndefined, let dflt { return dflt }
                    return r
                })
            }
            guard let first = args.first, case .string(let filterName) = first else {
                throw TemplateFailure("map requires a filter name or attribute=")
            }
            guard known.contains(filterName) else { throw TemplateFailure("No filter named '\(filterName)'.") }
            let rest = Array(args.dropFirst())
            return .iterator(kind: "generator", items: try items.map { try apply(filterName, $0, rest, kwargs, interp) })
        case "select", "reject", "selectattr", "rejectattr":
            let byAttr = name.hasSuffix("attr")
            var rest = args
            var attr: Value? = nil
            if byAttr {
                guard !rest.isEmpty else { throw TemplateFailure("\(name)() missing attribute argument") }
                attr = rest.removeFirst()
            }
            var testName: String? = nil
            if !rest.isEmpty {
                guard case .string(let t) = rest.removeFirst() else { throw TemplateFailure("test name must be a string") }
                guard Tests.known.contains(t) else { throw TemplateFailure("No test named '\(t)'.") }
                testName = t
            }
            let keep = name.hasPrefix("select")
            var out: [Value] = []
            for item in v.truthy ? try interp.iterate(v) : [] {
                let x = try attr.map { try attribute(item, $0, interp) } ?? item
                let r = try testName.map { try Tests.apply($0, x, rest, kwargs, interp) } ?? x.truthy
                if r == keep { out.append(item) }
            }
            return .iterator(kind: "generator", items: out)
        case "attr":
            let a = try bind(["name"])
            guard let n = try a.string(0, "name") else { throw TemplateFailure("attr() missing name") }
            return try interp.getattr(v, n)
        case "batch":
            let a = try bind(["linecount", "fill_with"])
            guard let n = try a.int(0, "linecount"), n > 0 else { throw TemplateFailure("batch size must be positive") }
            var out: [Value] = []
            var cur: [Value] = []
            for item in try interp.iterate(v) {
                cur.append(item)
                if cur.count == n { out.append(.list(cur)); cur = [] }
            }
            if !cur.isEmpty {
                if let fill = a[1] { while cur.count < n { cur.append(fill) } }
                out.append(.list(cur))
            }
            return .iterator(kind: "generator", items: out)
        case "striptags":
            _ = try bind([])
            var out = String.UnicodeScalarView()
            var inTag = false
            for c in soft(v).unicodeScalars {
                if c == "<" { inTag = true } else if c == ">" && inTag { inTag = false } else if !inTag { out.append(c) }
            }
            return .string(try Methods.split(String(out), nil, -1, fromRight: false).map { $0.str }.joined(separator: " "))
        case "pprint":
            return .string(v.repr)
        default:
            throw TemplateFailure("No filter named '\(name)'.")
        }
    }

    static func length(_ v: Value) throws -> Int {
        switch v.plain {
        case .string(let s): return s.unicodeScalars.count
        case .list(let a), .tuple(let a), .range(_, _, _, let a): return a.count
        case .dict(let d): return d.count
        case .undefined: return 0
        case .loop(let l): return l.items.count
        default: throw TemplateFailure("object of type '\(v.pythonTypeName)' has no len()")
        }
    }

    static func ignoreCase(_ v: Value) -> Value {
        if case .string(let s) = v { return .string(s.lowercased()) }
        return v
    }

    /// jinja2's make_attrgetter: "a.b" walks attributes/items, integers index. Split on code points, as
    /// Python's str.split: "." followed by a combining mark is one Character, and still a ".".
    static func attribute(_ item: Value, _ attr: Value, _ interp: Interpreter) throws -> Value {
        switch attr {
        case .string(let path):
            var cur = item
            for scalars in path.unicodeScalars.split(separator: ".", omittingEmptySubsequences: false) {
                let part = Methods.string(scalars)
                if let i = Int(part) { cur = try interp.getitem(cur, .int(i)) } else { cur = try interp.getitem(cur, .string(part)) }
            }
            return cur
        default:
            return try interp.getitem(item, attr)
        }
    }

    static func multiAttribute(_ item: Value, _ attr: Value, _ interp: Interpreter) throws -> Value {
        if case .string(let s) = attr, s.unicodeScalars.contains(",") {
            return .list(try s.unicodeScalars.split(separator: ",").map { try attribute(item, .string(Methods.string($0)), interp) })
        }
        return try attribute(item, attr, interp)
    }

    /// Python's `sorted(items, key=..., reverse=...)`: stable, and reverse keeps equal items in order.
    static func stableSort(_ items: [Value], _ keys: [Value], reverse: Bool, equalFirst: Bool = false) throws -> [Value] {
        var idx = Array(items.indices)
        var failure: Error? = nil
        // Merge sort via Swift's sort on (key, index) pairs with a throwing comparator captured.
        idx.sort { i, j in
            if failure != nil { return i < j }
            do {
                if equalFirst && pyEquals(keys[i], keys[j]) { return i < j }
                if reverse {
                    if try Ops.less(keys[j], keys[i]) { return true }
                    if try Ops.less(keys[i], keys[j]) { return false }
                } else {
                    if try Ops.less(keys[i], keys[j]) { return true }
                    if try Ops.less(keys[j], keys[i]) { return false }
                }
                return i < j
            } catch {
                failure = error
                return i < j
            }
        }
        if let failure { throw failure }
        return idx.map { items[$0] }
    }

    static func toInt(_ v: Value, _ dflt: Value, _ base: Int) -> Value {
        switch v {
        case .int(let i): return .int(i)
        case .bool(let b): return .int(b ? 1 : 0)
        case .float(let d):
            guard d.isFinite, abs(d) < 9.2e18 else { return dflt }
            return .int(Int(d.rounded(.towardZero)))
        case .string(let s):
            var t = Methods.strip(s, nil, left: true, right: true).replacingOccurrences(of: "_", with: "")
            var negative = false
            if t.hasPrefix("-") || t.hasPrefix("+") { negative = t.hasPrefix("-"); t.removeFirst() }
            var radix = base
            let lower = t.lowercased()
            for (prefix, r) in [("0x", 16), ("0o", 8), ("0b", 2)] where lower.hasPrefix(prefix) && (base == r || base == 0) {
                t.removeFirst(2)
                radix = r
            }
            if radix == 0 { radix = 10 }
            if radix >= 2 && radix <= 36, let i = Int(t, radix: radix) { return .int(negative ? -i : i) }
            if base == 10, let d = pyParseFloat(s), d.isFinite, abs(d) < 9.2e18 { return .int(Int(d.rounded(.towardZero))) }
            return dflt
        default: return dflt
        }
    }

    static func toFloat(_ v: Value) -> Value? {
        switch v {
        case .int(let i): return .float(Double(i))
        case .bool(let b): return .float(b ? 1 : 0)
        case .float: return v
        case .string(let s): return pyParseFloat(s).map { .float($0) }
        default: return nil
        }
    }

    static func pyParseFloat(_ s: String) -> Double? {
        let t = Methods.strip(s, nil, left: true, right: true).lowercased()
        switch t {
        case "inf", "+inf", "infinity", "+infinity": return .infinity
        case "-inf", "-infinity": return -.infinity
        case "nan", "+nan", "-nan": return .nan
        default: break
        }
        guard !t.isEmpty, t.unicodeScalars.allSatisfy({ "0123456789.eE+-_".unicodeScalars.contains($0) }) else { return nil }
        return Double(t.replacingOccurrences(of: "_", with: ""))
    }

    static func round(_ x: Double, _ precision: Int, _ method: String) -> Double {
        let p = Glibc.pow(10.0, Double(precision))
        switch method {
        case "ceil": return (x * p).rounded(.up) / p
        case "floor": return (x * p).rounded(.down) / p
        default:
            // Python's round(): correctly rounded half-even on the decimal value; format and reparse.
            if precision >= 0 && precision < 300 {
                let s = Format.cFormat("%." + String(precision) + "f", x)
                return Double(s) ?? x
            }
            return (x * p).rounded(.toNearestOrEven) / p
        }
    }

    static func title(_ s: String) -> String {
        // jinja2 splits on runs of [-\s({\[<] and capitalizes each piece's first character.
        var out = ""
        var word = String.UnicodeScalarView()
        var sep = String.UnicodeScalarView()
        func flushWord() {
            guard let f = word.first else { return }
            out += f.properties.uppercaseMapping + String(String.UnicodeScalarView(word.dropFirst())).lowercased()
            word = String.UnicodeScalarView()
        }
        for c in s.unicodeScalars {
            if pyIsSpace(c) || "-({[<".unicodeScalars.contains(c) {
                flushWord()
                sep.append(c)
            } else {
                if !sep.isEmpty {
                    out += String(sep)
                    sep = String.UnicodeScalarView()
                }
                word.append(c)
            }
        }
        flushWord()
        out += String(sep)
        return out
    }

    static func indent(_ s: String, _ indention: String, first: Bool, blank: Bool) -> String {
        let lines = Methods.splitlines(s + "\n")
        var rv: String
        if blank {
            rv = lines.joined(separator: "\n" + indention)
        } else {
            rv = lines.first ?? ""
            if lines.count > 1 {
                rv += "\n" + lines.dropFirst().map { $0.isEmpty ? $0 : indention + $0 }.joined(separator: "\n")
            }
        }
        if first { rv = indention + rv }
        return rv
    }

    static func truncate(_ s: String, _ length: Int, _ killwords: Bool, _ end: String, _ leeway: Int) -> String {
        let c = Array(s.unicodeScalars)
        if c.count <= length + leeway { return s }
        let keep = max(0, length - end.unicodeScalars.count)
        if killwords { return Methods.string(c.prefix(keep)) + end }
        var head = Methods.string(c.prefix(keep))
        if let space = head.unicodeScalars.lastIndex(of: " ") {
            head = String(head.unicodeScalars[..<space])
        }
        return head + end
    }

    static func escapeHTML(_ s: String) -> String {
        var out = ""
        for c in s.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&#34;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    /// transformers' tojson: `json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)`.
    static func toJSON(_ v: Value, ensureASCII: Bool, indent: Value?, separators: Value?, sortKeys: Bool) throws -> String {
        var indentWidth: Int? = nil
        if let i = indent {
            switch i {
            case .none: break
            case .int(let n): indentWidth = max(0, min(n, 1 << 10))
            default: throw TemplateFailure("tojson indent must be an integer")
            }
        }
        var options = JSONWriteOptions.python(indent: indentWidth, sortKeys: sortKeys, ensureASCII: ensureASCII)
        options.allowNaN = true
        if let sep = separators, !(sep.isNoneValue) {
            guard case let items = (try? sepItems(sep)) ?? [], items.count == 2 else {
                throw TemplateFailure("tojson separators must be a pair of strings")
            }
            options.itemSeparator = items[0]
            options.keySeparator = items[1]
        }
        return try toJSONValue(v, sortKeys: sortKeys, depth: 0).serialized(options)
    }

    static func sepItems(_ v: Value) throws -> [String] {
        switch v {
        case .list(let a), .tuple(let a):
            return try a.map { x in
                guard case .string(let s) = x else { throw TemplateFailure("separator must be a string") }
                return s
            }
        default: throw TemplateFailure("separators must be a tuple")
        }
    }

    static func toJSONValue(_ v: Value, sortKeys: Bool, depth: Int) throws -> JSONValue {
        if depth > ValueBounds.maxDepth { throw TemplateFailure("maximum recursion depth exceeded while encoding a JSON object") }
        switch v.plain {
        case .none: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return .int(Int64(i))
        case .float(let d): return .double(d)
        case .string(let s): return .string(s)
        case .list(let a), .tuple(let a): return .array(try a.map { try toJSONValue($0, sortKeys: sortKeys, depth: depth + 1) })
        case .dict(let d):
            var o = JSONObject()
            for e in d.entries {
                let key: String
                switch e.key {
                case .string(let s): key = s
                case .int(let i): key = String(i)
                case .float(let f): key = pyFloatRepr(f) == "nan" ? "NaN" : (f.isInfinite ? (f < 0 ? "-Infinity" : "Infinity") : pyFloatRepr(f))
                case .bool(let b): key = b ? "true" : "false"
                case .none: key = "null"
                default:
                    throw TemplateFailure("keys must be str, int, float, bool or None, not \(e.key.pythonTypeName)")
                }
                if sortKeys, case .string = e.key {} else if sortKeys {
                    throw TemplateFailure("'<' not supported between instances of '\(e.key.pythonTypeName)' and 'str'")
                }
                o.set(key, try toJSONValue(e.value, sortKeys: sortKeys, depth: depth + 1))
            }
            return .object(o)
        default:
            throw TemplateFailure("Object of type \(v.pythonTypeName) is not JSON serializable")
        }
    }
}

extension Value {
    var isNoneValue: Bool { if case .none = self { return true } else { return false } }
}
