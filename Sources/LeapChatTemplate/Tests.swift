// jinja2's builtin tests (`x is defined`, `x is string`, ...).

enum Tests {
    static let known: Set<String> = [
        "defined", "undefined", "none", "string", "number", "integer", "float", "mapping", "iterable",
        "sequence", "boolean", "true", "false", "even", "odd", "divisibleby", "equalto", "eq", "==", "ne", "!=",
        "lt", "<", "le", "<=", "gt", ">", "ge", ">=", "greaterthan", "lessthan", "lower", "upper", "callable",
        "sameas", "in", "escaped", "filter", "test",
    ]

    static func apply(_ name: String, _ v: Value, _ args: [Value], _ kwargs: [(String, Value)],
                      _ interp: Interpreter) throws -> Bool
    {
        let a = try Arguments(name, ["other"], args, kwargs)
        func other() throws -> Value {
            guard let o = a[0] else { throw TemplateFailure("test '\(name)' takes an argument") }
            return o
        }
        switch name {
        case "defined": return !v.isUndefined
        case "undefined": return v.isUndefined
        case "none": return v.isNoneValue
        case "string": if case .string = v.plain { return true } else { return false }
        case "number": return v.numeric != nil
        case "integer": if case .int = v { return true } else { return false }
        case "float": return v.isFloat
        case "boolean": if case .bool = v { return true } else { return false }
        case "true": if case .bool(true) = v { return true } else { return false }
        case "false": if case .bool(false) = v { return true } else { return false }
        case "mapping": if case .dict = v { return true } else { return false }
        case "iterable":
            switch v {
            case .string, .markup, .list, .tuple, .dict, .undefined, .iterator, .range: return true
            default: return false
            }
        case "sequence":
            switch v {
            case .string, .markup, .list, .tuple, .dict, .undefined, .range: return true
            default: return false
            }
        case "callable":
            switch v {
            case .callable, .undefined: return true  // jinja2's Undefined defines __call__ (it raises)
            default: return false
            }
        case "even", "odd":
            try Ops.undefinedCheck(v)
            guard case .int(let i)? = v.numeric, !v.isFloat else {
                if case .float(let d) = v { return Ops.pyFmod(d, 2) == (name == "even" ? 0 : 1) }
                throw TemplateFailure("unsupported operand type(s) for %: '\(v.pythonTypeName)' and 'int'")
            }
            return (i & 1 == 0) == (name == "even")
        case "divisibleby":
            let m = try Ops.binary("%", v, try other(), Int.max)
            return pyEquals(m, .int(0))
        case "equalto", "eq", "==": return pyEquals(v, try other())
        case "ne", "!=": return !pyEquals(v, try other())
        case "lt", "<", "lessthan": return try Ops.compare("<", v, try other())
        case "le", "<=": return try Ops.compare("<=", v, try other())
        case "gt", ">", "greaterthan": return try Ops.compare(">", v, try other())
        case "ge", ">=": return try Ops.compare(">=", v, try other())
        case "in": return try Ops.contains(try other(), v)
        case "lower", "upper":
            // str(value).islower() / .isupper(): needs at least one cased character.
            let s = v.str
            guard s.unicodeScalars.contains(where: { $0.properties.isCased }) else { return false }
            return name == "lower" ? s.lowercased() == s : s.uppercased() == s
        case "sameas":
            let o = try other()
            switch (v, o) {
            case (.none, .none): return true
            case (.bool(let x), .bool(let y)): return x == y
            case (.namespace(let x), .namespace(let y)): return x === y
            case (.int(let x), .int(let y)): return x == y && x >= -5 && x <= 256  // CPython's small-int cache
            default: return false
            }
        case "escaped": return v.isMarkup
        case "filter":
            guard case .string(let n) = v else { return false }
            return Filters.known.contains(n)
        case "test":
            guard case .string(let n) = v else { return false }
            return known.contains(n)
        default:
            throw TemplateFailure("No test named '\(name)'.")
        }
    }
}
