// Python operators on template values: arithmetic, comparison, membership.
import Glibc

enum Ops {
    static func undefinedCheck(_ vs: Value...) throws {
        for v in vs { if case .undefined(let u) = v { throw TemplateFailure(u.hint) } }
    }

    static func unsupported(_ op: String, _ a: Value, _ b: Value) -> TemplateFailure {
        TemplateFailure("unsupported operand type(s) for \(op): '\(a.pythonTypeName)' and '\(b.pythonTypeName)'")
    }

    static func unary(_ op: String, _ v: Value) throws -> Value {
        if op == "not" { return .bool(!v.truthy) }
        try undefinedCheck(v)
        switch v.numeric {
        case .int(let i)?:
            if op == "+" { return .int(i) }
            let (r, o) = Int(0).subtractingReportingOverflow(i)
            if o { throw TemplateFailure("integer overflow") }
            return .int(r)
        case .float(let d)?: return .float(op == "-" ? -d : d)
        case nil: throw TemplateFailure("bad operand type for unary \(op): '\(v.pythonTypeName)'")
        }
    }

    static func checked(_ r: (partialValue: Int, overflow: Bool)) throws -> Value {
        if r.overflow { throw TemplateFailure("integer overflow (Python integers are unbounded; libleap's are 64-bit)") }
        return .int(r.partialValue)
    }

    static func binary(_ op: String, _ x: Value, _ y: Value, _ maxBytes: Int) throws -> Value {
        try undefinedCheck(x, y)
        // Markup + str escapes the str (markupsafe); the result stays Markup.
        if op == "+" && (x.isMarkup || y.isMarkup) {
            func escaped(_ v: Value) -> Value {
                if case .string(let s) = v { return .string(Filters.escapeHTML(s)) }
                return v.plain
            }
            if case .string(let r) = try binary("+", escaped(x), escaped(y), maxBytes) { return .markup(r) }
        }
        if op == "*" && (x.isMarkup || y.isMarkup), case .string(let r) = try binary("*", x.plain, y.plain, maxBytes) {
            return .markup(r)
        }
        let a = x.plain, b = y.plain
        if let x = a.numeric, let y = b.numeric { return try numeric(op, x, y) }
        switch (op, a, b) {
        case ("+", .string(let x), .string(let y)):
            if x.utf8.count + y.utf8.count > maxBytes { throw TemplateFailure("string exceeds \(maxBytes) bytes") }
            return .string(x + y)
        case ("+", .list(let x), .list(let y)): return .list(x + y)
        case ("+", .tuple(let x), .tuple(let y)): return .tuple(x + y)
        case ("+", .string, _), ("+", .list, _), ("+", .tuple, _):
            throw TemplateFailure(
                "can only concatenate \(a.pythonTypeName) (not \"\(b.pythonTypeName)\") to \(a.pythonTypeName)")
        case ("*", .string, _), ("*", .list, _), ("*", .tuple, _): return try repeatSeq(a, b, maxBytes)
        case ("*", _, .string), ("*", _, .list), ("*", _, .tuple): return try repeatSeq(b, a, maxBytes)
        case ("%", .string(let fmt), _): return .string(try Format.percent(fmt, b))
        default: throw unsupported(op, a, b)
        }
    }

    static func repeatSeq(_ seq: Value, _ count: Value, _ maxBytes: Int) throws -> Value {
        guard case .int(let n)? = count.numeric, !(count.isFloat) else {
            throw TemplateFailure("can't multiply sequence by non-int of type '\(count.pythonTypeName)'")
        }
        let times = max(0, n)
        switch seq {
        case .string(let s):
            if times > 0 && s.utf8.count > maxBytes / times { throw TemplateFailure("string exceeds \(maxBytes) bytes") }
            return .string(String(repeating: s, count: times))
        case .list(let items), .tuple(let items):
            if times > 0 && items.count > (maxBytes / 8) / times { throw TemplateFailure("list is too large") }
            var r: [Value] = []
            for _ in 0..<times { r += items }
            if case .tuple = seq { return .tuple(r) }
            return .list(r)
        default: throw unsupported("*", seq, count)
        }
    }

    static func floorDiv(_ x: Int, _ y: Int) -> Int {
        let q = x / y
        return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q
    }

    static func pyFmod(_ x: Double, _ y: Double) -> Double {
        var m = x.truncatingRemainder(dividingBy: y)
        if m != 0 && ((m < 0) != (y < 0)) { m += y }
        return m
    }

    static func numeric(_ op: String, _ a: Numeric, _ b: Numeric) throws -> Value {
        if case .int(let x) = a, case .int(let y) = b {
            switch op {
            case "+": return try checked(x.addingReportingOverflow(y))
            case "-": return try checked(x.subtractingReportingOverflow(y))
            case "*": return try checked(x.multipliedReportingOverflow(by: y))
            case "/":
                if y == 0 { throw TemplateFailure("division by zero") }
                return .float(Double(x) / Double(y))
            case "//":
                if y == 0 { throw TemplateFailure("integer division or modulo by zero") }
                if x == Int.min && y == -1 { throw TemplateFailure("integer overflow") }
                return .int(floorDiv(x, y))
            case "%":
                if y == 0 { throw TemplateFailure("integer modulo by zero") }
                if y == -1 { return .int(0) }
                let m = x % y
                return .int(m != 0 && ((m < 0) != (y < 0)) ? m + y : m)
            case "**":
                if y < 0 {
                    if x == 0 { throw TemplateFailure("0.0 cannot be raised to a negative power") }
                    return .float(pow(Double(x), Double(y)))
                }
                var result = 1, base = x, e = y
                while e > 0 {
                    if e & 1 == 1 {
                        let r = result.multipliedReportingOverflow(by: base)
                        if r.overflow { throw TemplateFailure("integer overflow") }
                        result = r.partialValue
                    }
                    e >>= 1
                    if e > 0 {
                        let r = base.multipliedReportingOverflow(by: base)
                        if r.overflow { throw TemplateFailure("integer overflow") }
                        base = r.partialValue
                    }
                }
                return .int(result)
            default: break
            }
        }
        let x = a.asDouble, y = b.asDouble
        switch op {
        case "+": return .float(x + y)
        case "-": return .float(x - y)
        case "*": return .float(x * y)
        case "/":
            if y == 0 { throw TemplateFailure("float division by zero") }
            return .float(x / y)
        case "//":
            if y == 0 { throw TemplateFailure("float floor division by zero") }
            return .float(((x - pyFmod(x, y)) / y).rounded())
        case "%":
            if y == 0 { throw TemplateFailure("float modulo") }
            return .float(pyFmod(x, y))
        case "**":
            if x == 0 && y < 0 { throw TemplateFailure("0.0 cannot be raised to a negative power") }
            return .float(pow(x, y))
        default: throw TemplateFailure("unknown operator \(op)")
        }
    }

    /// Python's `<` family; nil result means the types are not orderable.
    static func less(_ x: Value, _ y: Value) throws -> Bool {
        try undefinedCheck(x, y)
        let a = x.plain, b = y.plain
        if let x = a.numeric, let y = b.numeric {
            if case .int(let i) = x, case .int(let j) = y { return i < j }
            return x.asDouble < y.asDouble
        }
        switch (a, b) {
        case (.string(let x), .string(let y)):
            return x.unicodeScalars.lexicographicallyPrecedes(y.unicodeScalars)
        case (.list(let x), .list(let y)), (.tuple(let x), .tuple(let y)):
            for (p, q) in zip(x, y) where !pyEquals(p, q) { return try less(p, q) }
            return x.count < y.count
        default:
            throw TemplateFailure(
                "'<' not supported between instances of '\(a.pythonTypeName)' and '\(b.pythonTypeName)'")
        }
    }

    static func compare(_ op: String, _ a: Value, _ b: Value) throws -> Bool {
        switch op {
        case "==": return pyEquals(a, b)
        case "!=": return !pyEquals(a, b)
        case "<": return try less(a, b)
        case ">": return try less(b, a)
        case "<=": return try !less(b, a) && orderable(a, b, "<=")
        case ">=": return try !less(a, b) && orderable(a, b, ">=")
        case "in": return try contains(b, a)
        case "notin": return try !contains(b, a)
        default: throw TemplateFailure("unknown comparison \(op)")
        }
    }

    /// NaN compares false under every ordering, as in Python.
    static func orderable(_ a: Value, _ b: Value, _ op: String) -> Bool {
        if case .float(let x)? = a.numeric, x.isNaN { return false }
        if case .float(let y)? = b.numeric, y.isNaN { return false }
        return true
    }

    /// Python's `item in container`.
    static func contains(_ c: Value, _ i: Value) throws -> Bool {
        let container = c.plain, item = i.plain
        switch container {
        case .string(let s):
            guard case .string(let sub) = item else {
                if case .undefined(let u) = item { throw TemplateFailure(u.hint) }
                throw TemplateFailure("'in <string>' requires string as left operand, not \(item.pythonTypeName)")
            }
            return sub.isEmpty || s.unicodeScalars.firstRange(of: sub.unicodeScalars) != nil
        case .list(let a), .tuple(let a), .iterator(_, let a), .range(_, _, _, let a): return a.contains { pyEquals($0, item) }
        case .dict(let d):
            switch item {
            case .list, .dict, .namespace: throw TemplateFailure("unhashable type: '\(item.pythonTypeName)'")
            default: return d[item] != nil
            }
        case .undefined: return false
        default:
            throw TemplateFailure("argument of type '\(container.pythonTypeName)' is not iterable")
        }
    }
}

extension Value {
    var isFloat: Bool { if case .float = self { return true } else { return false } }
}
