// Python methods callable on strings, dicts and lists (the ones the immutable sandbox allows).

/// Binds call arguments to named parameters like Python does, for builtins with defaults.
struct Arguments {
    let values: [Value?]
    let function: String

    init(_ function: String, _ names: [String], _ args: [Value], _ kwargs: [(String, Value)]) throws {
        self.function = function
        var v = [Value?](repeating: nil, count: names.count)
        if args.count > names.count {
            throw TemplateFailure("\(function)() takes at most \(names.count) argument(s) (\(args.count) given)")
        }
        for (i, a) in args.enumerated() { v[i] = a }
        for (k, a) in kwargs {
            guard let i = names.firstIndex(of: k) else {
                throw TemplateFailure("\(function)() got an unexpected keyword argument '\(k)'")
            }
            if v[i] != nil { throw TemplateFailure("\(function)() got multiple values for argument '\(k)'") }
            v[i] = a
        }
        values = v
    }

    subscript(i: Int) -> Value? {
        guard i < values.count, let v = values[i] else { return nil }
        return v
    }

    func string(_ i: Int, _ what: String) throws -> String? {
        guard let v = self[i] else { return nil }
        if case .none = v { return nil }
        guard case .string(let s) = v else {
            throw TemplateFailure("\(function)() argument '\(what)' must be str, not \(v.pythonTypeName)")
        }
        return s
    }

    func int(_ i: Int, _ what: String) throws -> Int? {
        guard let v = self[i] else { return nil }
        if case .none = v { return nil }
        guard let n = v.indexValue else {
            throw TemplateFailure("\(function)() argument '\(what)' must be int, not \(v.pythonTypeName)")
        }
        return n
    }

    func bool(_ i: Int) -> Bool? { self[i].map { $0.truthy } }
}

enum Methods {
    static let stringMethods: Set<String> = [
        "split", "rsplit", "strip", "lstrip", "rstrip", "startswith", "endswith", "upper", "lower", "title",
        "capitalize", "replace", "find", "rfind", "index", "rindex", "count", "join", "format", "isdigit",
        "isalpha", "isalnum", "isspace", "isupper", "islower", "isnumeric", "isdecimal", "splitlines", "swapcase",
        "center", "ljust", "rjust", "zfill", "removeprefix", "removesuffix", "partition", "rpartition",
        "casefold", "istitle", "expandtabs", "encode",
    ]
    static let dictMethods: Set<String> = ["items", "keys", "values", "get", "copy"]
    static let dictUnsafe: Set<String> = ["pop", "popitem", "setdefault", "update", "clear"]
    static let listMethods: Set<String> = ["index", "count", "copy"]
    static let listUnsafe: Set<String> = ["append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear"]

    /// The bound method `obj.name`, or the sandbox's unsafe-attribute undefined, or nil.
    static func lookup(_ obj: Value, _ name: String) -> Value? {
        var unsafe: Value {
            .undefined(Undefined(hint: "access to attribute '\(name)' of '\(obj.pythonTypeName)' object is unsafe.",
                                 unsafe: true))
        }
        switch obj.plain {
        case .string:
            if stringMethods.contains(name) { return .callable(.method(receiver: obj, name: name)) }
        case .dict:
            if dictMethods.contains(name) { return .callable(.method(receiver: obj, name: name)) }
            if dictUnsafe.contains(name) { return unsafe }
        case .list, .tuple:
            if listMethods.contains(name) { return .callable(.method(receiver: obj, name: name)) }
            if case .list = obj, listUnsafe.contains(name) { return unsafe }
        default: break
        }
        if name.hasPrefix("_") && name.hasSuffix("_") { return unsafe }
        return nil
    }

    static func call(_ obj: Value, _ name: String, _ args: [Value], _ kwargs: [(String, Value)],
                     _ interp: Interpreter) throws -> Value
    {
        switch obj {
        case .markup(let s):
            // Markup's str methods return Markup (lists of Markup for split and friends).
            func wrap(_ v: Value) -> Value {
                switch v {
                case .string(let t): return .markup(t)
                case .list(let a): return .list(a.map(wrap))
                case .tuple(let a): return .tuple(a.map(wrap))
                default: return v
                }
            }
            let escapedArgs = args.map { a -> Value in
                if case .string(let t) = a { return .string(Filters.escapeHTML(t)) }
                return a.plain
            }
            let r = try stringMethod(s, name, ["join", "format", "replace"].contains(name) ? escapedArgs : args.map { $0.plain }, kwargs)
            return wrap(r)
        case .string(let s): return try stringMethod(s, name, args.map { $0.plain }, kwargs)
        case .dict(let d):
            switch name {
            case "items": return .list(d.entries.map { .tuple([$0.key, $0.value]) })
            case "keys": return .list(d.entries.map { $0.key })
            case "values": return .list(d.entries.map { $0.value })
            case "copy": return obj
            case "get":
                let a = try Arguments("get", ["key", "default"], args, kwargs)
                guard let key = a[0] else { throw TemplateFailure("get expected at least 1 argument, got 0") }
                return d[key] ?? a[1] ?? .none
            default: break
            }
        case .list(let items), .tuple(let items):
            switch name {
            case "copy": return obj
            case "count":
                guard args.count == 1 else { throw TemplateFailure("count() takes exactly one argument") }
                return .int(items.filter { pyEquals($0, args[0]) }.count)
            case "index":
                guard args.count >= 1 else { throw TemplateFailure("index expected at least 1 argument, got 0") }
                if let i = items.firstIndex(where: { pyEquals($0, args[0]) }) { return .int(i) }
                throw TemplateFailure("\(args[0].repr) is not in list")
            default: break
            }
        default: break
        }
        throw TemplateFailure("'\(obj.pythonTypeName)' object has no attribute '\(name)'")
    }

    static func scalars(_ s: String) -> [Unicode.Scalar] { Array(s.unicodeScalars) }
    static func string<C: Sequence>(_ c: C) -> String where C.Element == Unicode.Scalar {
        var v = String.UnicodeScalarView()
        v.append(contentsOf: c)
        return String(v)
    }

    /// Python's `str.split(sep, maxsplit)`.
    static func split(_ s: String, _ sep: String?, _ maxsplit: Int, fromRight: Bool) throws -> [Value] {
        let chars = scalars(s)
        var parts: [String] = []
        if let sep {
            let sepChars = scalars(sep)
            if sepChars.isEmpty { throw TemplateFailure("empty separator") }
            var pieces: [[Unicode.Scalar]] = []
            if !fromRight {
                var start = 0, i = 0
                while i + sepChars.count <= chars.count {
                    if (maxsplit < 0 || pieces.count < maxsplit) && chars[i..<(i + sepChars.count)].elementsEqual(sepChars) {
                        pieces.append(Array(chars[start..<i]))
                        i += sepChars.count
                        start = i
                    } else {
                        i += 1
                    }
                }
                pieces.append(Array(chars[start...]))
            } else {
                var end = chars.count, i = chars.count - sepChars.count
                while i >= 0 {
                    if (maxsplit < 0 || pieces.count < maxsplit) && chars[i..<(i + sepChars.count)].elementsEqual(sepChars) {
                        pieces.append(Array(chars[(i + sepChars.count)..<end]))
                        end = i
                        i -= sepChars.count
                    } else {
                        i -= 1
                    }
                }
                pieces.append(Array(chars[0..<end]))
                pieces.reverse()
            }
            parts = pieces.map { string($0) }
        } else {
            // Whitespace splitting: runs of whitespace, no empty strings.
            var words: [[Unicode.Scalar]] = []
            if !fromRight {
                var i = 0
                while i < chars.count {
                    while i < chars.count && pyIsSpace(chars[i]) { i += 1 }
                    if i >= chars.count { break }
                    if maxsplit >= 0 && words.count == maxsplit {
                        var end = chars.count
                        while end > i && pyIsSpace(chars[end - 1]) { end -= 1 }
                        words.append(Array(chars[i..<end]))
                        break
                    }
                    let start = i
                    while i < chars.count && !pyIsSpace(chars[i]) { i += 1 }
                    words.append(Array(chars[start..<i]))
                }
            } else {
                var i = chars.count
                while i > 0 {
                    while i > 0 && pyIsSpace(chars[i - 1]) { i -= 1 }
                    if i == 0 { break }
                    if maxsplit >= 0 && words.count == maxsplit {
                        var start = 0
                        while start < i && pyIsSpace(chars[start]) { start += 1 }
                        words.append(Array(chars[start..<i]))
                        break
                    }
                    let end = i
                    while i > 0 && !pyIsSpace(chars[i - 1]) { i -= 1 }
                    words.append(Array(chars[i..<end]))
                }
                words.reverse()
            }
            parts = words.map { string($0) }
        }
        return parts.map { .string($0) }
    }

    static func strip(_ s: String, _ chars: String?, left: Bool, right: Bool) -> String {
        let c = scalars(s)
        let set = chars.map { Set($0.unicodeScalars) }
        func strippable(_ x: Unicode.Scalar) -> Bool { set.map { $0.contains(x) } ?? pyIsSpace(x) }
        var a = 0, b = c.count
        if left { while a < b && strippable(c[a]) { a += 1 } }
        if right { while b > a && strippable(c[b - 1]) { b -= 1 } }
        return string(c[a..<b])
    }

    static func find(_ hay: [Unicode.Scalar], _ needle: [Unicode.Scalar], from: Int, to: Int, last: Bool) -> Int {
        if needle.count > to - from { return -1 }
        if last {
            var i = to - needle.count
            while i >= from {
                if hay[i..<(i + needle.count)].elementsEqual(needle) { return i }
                i -= 1
            }
        } else {
            var i = from
            while i + needle.count <= to {
                if hay[i..<(i + needle.count)].elementsEqual(needle) { return i }
                i += 1
            }
        }
        return -1
    }

    /// Python's slice-style clamping of optional start/end.
    static func range(_ n: Int, _ start: Int?, _ end: Int?) -> (Int, Int) {
        func clamp(_ v: Int) -> Int { v < 0 ? max(0, v + n) : min(v, n) }
        return (start.map(clamp) ?? 0, end.map(clamp) ?? n)
    }

    static func title(_ s: String) -> String {
        var out = String.UnicodeScalarView()
        var prevCased = false
        for c in s.unicodeScalars {
            let p = c.properties
            if p.isCased {
                out.append(contentsOf: (prevCased ? p.lowercaseMapping : p.titlecaseMapping).unicodeScalars)
            } else {
                out.append(c)
            }
            prevCased = p.isCased || p.isCaseIgnorable && prevCased
        }
        return String(out)
    }

    static func capitalize(_ s: String) -> String {
        var out = String.UnicodeScalarView()
        for (i, c) in s.unicodeScalars.enumerated() {
            out.append(contentsOf: (i == 0 ? c.properties.titlecaseMapping : c.properties.lowercaseMapping).unicodeScalars)
        }
        return String(out)
    }

    /// Python's `str.splitlines()` (also used by the indent filter).
    static func splitlines(_ s: String, keepends: Bool = false) -> [String] {
        let c = scalars(s)
        var lines: [String] = []
        var start = 0, i = 0
        while i < c.count {
            let x = c[i].value
            let isBreak = x == 0x0A || x == 0x0D || x == 0x0B || x == 0x0C || x == 0x1C || x == 0x1D || x == 0x1E
                || x == 0x85 || x == 0x2028 || x == 0x2029
            if isBreak {
                var end = i + 1
                if x == 0x0D && i + 1 < c.count && c[i + 1] == "\n" { end = i + 2 }
                lines.append(string(c[start..<(keepends ? end : i)]))
                start = end
                i = end
            } else {
                i += 1
            }
        }
        if start < c.count { lines.append(string(c[start...])) }
        return lines
    }

    static func stringMethod(_ s: String, _ name: String, _ args: [Value], _ kwargs: [(String, Value)]) throws -> Value {
        switch name {
        case "split", "rsplit":
            let a = try Arguments(name, ["sep", "maxsplit"], args, kwargs)
            return .list(try split(s, try a.string(0, "sep"), try a.int(1, "maxsplit") ?? -1, fromRight: name == "rsplit"))
        case "strip", "lstrip", "rstrip":
            let a = try Arguments(name, ["chars"], args, kwargs)
            return .string(strip(s, try a.string(0, "chars"), left: name != "rstrip", right: name != "lstrip"))
        case "startswith", "endswith":
            let a = try Arguments(name, ["prefix", "start", "end"], args, kwargs)
            guard let p = a[0] else { throw TemplateFailure("\(name)() takes at least 1 argument (0 given)") }
            let candidates: [Value]
            switch p {
            case .string: candidates = [p]
            case .tuple(let t): candidates = t
            default:
                throw TemplateFailure("\(name) first arg must be str or a tuple of str, not \(p.pythonTypeName)")
            }
            let c = scalars(s)
            let (lo, hi) = range(c.count, try a.int(1, "start"), try a.int(2, "end"))
            for cand in candidates {
                guard case .string(let x) = cand else {
                    throw TemplateFailure("tuple for \(name) must only contain str, not \(cand.pythonTypeName)")
                }
                let xc = scalars(x)
                if hi - lo < xc.count { continue }
                if name == "startswith" ? c[lo..<(lo + xc.count)].elementsEqual(xc)
                    : c[(hi - xc.count)..<hi].elementsEqual(xc)
                {
                    return .bool(true)
                }
            }
            return .bool(false)
        case "upper": return .string(s.uppercased())
        case "lower": return .string(s.lowercased())
        case "casefold": return .string(s.lowercased())
        case "swapcase":
            return .string(string(s.unicodeScalars.flatMap { c -> [Unicode.Scalar] in
                let p = c.properties
                if p.isUppercase { return Array(p.lowercaseMapping.unicodeScalars) }
                if p.isLowercase { return Array(p.uppercaseMapping.unicodeScalars) }
                return [c]
            }))
        case "title": return .string(title(s))
        case "capitalize": return .string(capitalize(s))
        case "replace":
            let a = try Arguments(name, ["old", "new", "count"], args, kwargs)
            guard let old = try a.string(0, "old"), let new = try a.string(1, "new") else {
                throw TemplateFailure("replace expected at least 2 arguments")
            }
            return .string(replace(s, old, new, count: try a.int(2, "count") ?? -1))
        case "find", "rfind", "index", "rindex", "count":
            let a = try Arguments(name, ["sub", "start", "end"], args, kwargs)
            guard let sub = try a.string(0, "sub") else { throw TemplateFailure("\(name)() takes at least 1 argument") }
            let c = scalars(s), n = scalars(sub)
            let (lo, hi) = range(c.count, try a.int(1, "start"), try a.int(2, "end"))
            if name == "count" {
                if lo > hi { return .int(0) }
                if n.isEmpty { return .int(hi - lo + 1) }
                var count = 0, i = lo
                while i + n.count <= hi {
                    if c[i..<(i + n.count)].elementsEqual(n) { count += 1; i += n.count } else { i += 1 }
                }
                return .int(count)
            }
            let r = lo > hi ? -1 : find(c, n, from: lo, to: hi, last: name.hasPrefix("r"))
            if r < 0 && name.hasSuffix("index") { throw TemplateFailure("substring not found") }
            return .int(r)
        case "join":
            guard args.count == 1 else { throw TemplateFailure("join() takes exactly one argument") }
            var parts: [String] = []
            for item in try iterateForJoin(args[0]) {
                guard case .string(let x) = item else {
                    throw TemplateFailure("sequence item \(parts.count): expected str instance, \(item.pythonTypeName) found")
                }
                parts.append(x)
            }
            return .string(parts.joined(separator: s))
        case "format": return .string(try Format.brace(s, args, kwargs))
        case "isdigit", "isnumeric", "isdecimal":
            return .bool(!s.isEmpty && s.unicodeScalars.allSatisfy { $0.properties.numericType != nil })
        case "isalpha": return .bool(!s.isEmpty && s.unicodeScalars.allSatisfy { $0.properties.isAlphabetic })
        case "isalnum":
            return .bool(!s.isEmpty && s.unicodeScalars.allSatisfy { $0.properties.isAlphabetic || $0.properties.numericType != nil })
        case "isspace": return .bool(!s.isEmpty && s.unicodeScalars.allSatisfy(pyIsSpace))
        case "isupper", "islower":
            let cased = s.unicodeScalars.filter { $0.properties.isCased }
            if cased.isEmpty { return .bool(false) }
            return .bool(name == "isupper" ? s.uppercased() == s : s.lowercased() == s)
        case "istitle": return .bool(!s.isEmpty && title(s) == s)
        case "splitlines":
            let a = try Arguments(name, ["keepends"], args, kwargs)
            return .list(splitlines(s, keepends: a.bool(0) ?? false).map { .string($0) })
        case "center", "ljust", "rjust":
            let a = try Arguments(name, ["width", "fillchar"], args, kwargs)
            guard let width = try a.int(0, "width") else { throw TemplateFailure("\(name)() takes at least 1 argument") }
            let fill = try a.string(1, "fillchar") ?? " "
            guard fill.unicodeScalars.count == 1 else {
                throw TemplateFailure("The fill character must be exactly one character long")
            }
            return .string(pad(s, width, fill, name))
        case "zfill":
            let a = try Arguments(name, ["width"], args, kwargs)
            let width = try a.int(0, "width") ?? 0
            var c = scalars(s)
            let n = width - c.count
            if n <= 0 { return .string(s) }
            let signed = c.first == "+" || c.first == "-"
            c.insert(contentsOf: Array(repeating: "0", count: n), at: signed ? 1 : 0)
            return .string(string(c))
        case "removeprefix", "removesuffix":
            guard args.count == 1, case .string(let x) = args[0] else { throw TemplateFailure("\(name)() takes one str argument") }
            if name == "removeprefix" && s.unicodeScalars.starts(with: x.unicodeScalars) {
                return .string(string(s.unicodeScalars.dropFirst(x.unicodeScalars.count)))
            }
            if name == "removesuffix" && !x.isEmpty && s.unicodeScalars.reversed().starts(with: x.unicodeScalars.reversed()) {
                return .string(string(s.unicodeScalars.dropLast(x.unicodeScalars.count)))
            }
            return .string(s)
        case "partition", "rpartition":
            guard args.count == 1, case .string(let sep) = args[0], !sep.isEmpty else {
                throw TemplateFailure("\(name)() takes one non-empty str argument")
            }
            let c = scalars(s), n = scalars(sep)
            let i = find(c, n, from: 0, to: c.count, last: name == "rpartition")
            if i < 0 {
                return name == "partition" ? .tuple([.string(s), .string(""), .string("")])
                    : .tuple([.string(""), .string(""), .string(s)])
            }
            return .tuple([.string(string(c[0..<i])), .string(sep), .string(string(c[(i + n.count)...]))])
        case "expandtabs":
            return .string(s.replacingOccurrences(of: "\t", with: "        "))
        default:
            throw TemplateFailure("'str' object has no attribute '\(name)'")
        }
    }

    static func iterateForJoin(_ v: Value) throws -> [Value] {
        switch v {
        case .list(let a), .tuple(let a): return a
        case .string(let s): return s.unicodeScalars.map { .string(String($0)) }
        case .dict(let d): return d.entries.map { $0.key }
        default: throw TemplateFailure("can only join an iterable")
        }
    }

    static func replace(_ s: String, _ old: String, _ new: String, count: Int) -> String {
        let c = scalars(s), o = scalars(old), n = scalars(new)
        var out: [Unicode.Scalar] = []
        var done = 0
        if o.isEmpty {
            // Python inserts `new` before every character and at the end.
            for ch in c {
                if count < 0 || done < count { out += n; done += 1 }
                out.append(ch)
            }
            if count < 0 || done < count { out += n }
            return string(out)
        }
        var i = 0
        while i < c.count {
            if (count < 0 || done < count) && i + o.count <= c.count && c[i..<(i + o.count)].elementsEqual(o) {
                out += n
                i += o.count
                done += 1
            } else {
                out.append(c[i])
                i += 1
            }
        }
        return string(out)
    }

    static func pad(_ s: String, _ width: Int, _ fill: String, _ mode: String) -> String {
        let len = s.unicodeScalars.count
        if width <= len { return s }
        let total = width - len
        var left = 0
        switch mode {
        case "ljust": left = 0
        case "rjust": left = total
        default: left = total / 2 + (total & width & 1)  // CPython's centering rule
        }
        return String(repeating: fill, count: left) + s + String(repeating: fill, count: total - left)
    }
}

extension String {
    func replacingOccurrences(of a: String, with b: String) -> String {
        Methods.replace(self, a, b, count: -1)
    }
}
