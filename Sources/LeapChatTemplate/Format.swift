// Python string formatting: `"%s" % x` and `"{}".format(x)` (the common conversions only).
import Glibc

enum Format {
    /// Python's `fmt % args` for %s %r %d %i %f %x %% (with width/precision), incl. `%(name)s` with a dict.
    static func percent(_ fmt: String, _ args: Value) throws -> String {
        var positional: [Value]
        var mapping: PyDict? = nil
        switch args {
        case .tuple(let t): positional = t
        case .dict(let d): positional = [args]; mapping = d
        default: positional = [args]
        }
        let c = Array(fmt.unicodeScalars)
        var out = ""
        var i = 0, next = 0
        while i < c.count {
            guard c[i] == "%" else { out.unicodeScalars.append(c[i]); i += 1; continue }
            i += 1
            guard i < c.count else { throw TemplateFailure("incomplete format") }
            var value: Value? = nil
            if c[i] == "(" {
                guard let m = mapping else { throw TemplateFailure("format requires a mapping") }
                var j = i + 1
                while j < c.count && c[j] != ")" { j += 1 }
                guard j < c.count else { throw TemplateFailure("incomplete format key") }
                let key = Methods.string(c[(i + 1)..<j])
                guard let v = m[string: key] else { throw TemplateFailure("KeyError: \(pyStringRepr(key))") }
                value = v
                i = j + 1
            }
            var flags = ""
            while i < c.count, "-+ 0#".unicodeScalars.contains(c[i]) { flags.unicodeScalars.append(c[i]); i += 1 }
            var width = 0
            while i < c.count, let d = c[i].properties.numericType != nil ? Int(String(c[i])) : nil { width = width * 10 + d; i += 1 }
            var precision: Int? = nil
            if i < c.count && c[i] == "." {
                i += 1
                var p = 0
                while i < c.count, let d = Int(String(c[i])) { p = p * 10 + d; i += 1 }
                precision = p
            }
            guard i < c.count else { throw TemplateFailure("incomplete format") }
            let conv = c[i]
            i += 1
            if conv == "%" { out += "%"; continue }
            if value == nil {
                guard next < positional.count else { throw TemplateFailure("not enough arguments for format string") }
                value = positional[next]
                next += 1
            }
            guard let v = value else { continue }
            var text: String
            switch conv {
            case "s": text = v.str
            case "r", "a": text = v.repr
            case "d", "i", "u":
                guard let n = v.numeric else {
                    throw TemplateFailure("%\(conv) format: a real number is required, not \(v.pythonTypeName)")
                }
                switch n {
                case .int(let x): text = String(x)
                case .float(let d): text = String(Int(d.rounded(.towardZero)))
                }
                if flags.contains("+") && !text.hasPrefix("-") { text = "+" + text }
            case "f", "F", "e", "g":
                guard let n = v.numeric else {
                    throw TemplateFailure("must be real number, not \(v.pythonTypeName)")
                }
                text = cFormat("%." + String(precision ?? 6) + String(conv), n.asDouble)
            case "x", "X", "o":
                guard case .int(let x)? = v.numeric else { throw TemplateFailure("%\(conv) format: an integer is required") }
                text = String(x, radix: conv == "o" ? 8 : 16, uppercase: conv == "X")
            default:
                throw TemplateFailure("unsupported format character '\(conv)'")
            }
            if conv == "s" || conv == "r", let p = precision { text = Methods.string(text.unicodeScalars.prefix(p)) }
            let pad = width - text.unicodeScalars.count
            if pad > 0 {
                if flags.contains("-") { text += String(repeating: " ", count: pad) }
                else if flags.contains("0") && conv != "s" && conv != "r" { text = String(repeating: "0", count: pad) + text }
                else { text = String(repeating: " ", count: pad) + text }
            }
            out += text
        }
        // Python only complains about leftovers for tuples and plain values; anything with __getitem__
        // (list, dict) counts as a mapping.
        var isSequenceLike = false
        if case .list = args { isSequenceLike = true }
        if mapping == nil && !isSequenceLike && next < positional.count {
            throw TemplateFailure("not all arguments converted during string formatting")
        }
        return out
    }

    static func cFormat(_ f: String, _ d: Double) -> String {
        var buf = [CChar](repeating: 0, count: 512)
        _ = withVaList([d]) { vsnprintf(&buf, buf.count, f, $0) }
        return String(cString: buf)
    }

    /// Python's `str.format` for `{}`, `{0}`, `{name}`, `{x!r}`, `{{`/`}}`; format specs are not supported.
    static func brace(_ fmt: String, _ args: [Value], _ kwargs: [(String, Value)]) throws -> String {
        let c = Array(fmt.unicodeScalars)
        var out = ""
        var i = 0, auto = 0
        while i < c.count {
            let ch = c[i]
            if ch == "{" {
                if i + 1 < c.count && c[i + 1] == "{" { out += "{"; i += 2; continue }
                var j = i + 1
                while j < c.count && c[j] != "}" { j += 1 }
                guard j < c.count else { throw TemplateFailure("Single '{' encountered in format string") }
                var field = Methods.string(c[(i + 1)..<j])
                i = j + 1
                var conversion = "s"
                if let bang = field.firstIndex(of: "!") {
                    conversion = String(field[field.index(after: bang)...])
                    field = String(field[..<bang])
                }
                if field.contains(":") { throw TemplateFailure("format specs in str.format are not supported") }
                let v: Value
                if field.isEmpty {
                    guard auto < args.count else { throw TemplateFailure("Replacement index \(auto) out of range for positional args tuple") }
                    v = args[auto]
                    auto += 1
                } else if let n = Int(field) {
                    guard n >= 0 && n < args.count else { throw TemplateFailure("Replacement index \(n) out of range for positional args tuple") }
                    v = args[n]
                } else {
                    guard let kv = kwargs.first(where: { $0.0 == field }) else { throw TemplateFailure("KeyError: '\(field)'") }
                    v = kv.1
                }
                out += conversion == "r" ? v.repr : v.str
            } else if ch == "}" {
                guard i + 1 < c.count && c[i + 1] == "}" else { throw TemplateFailure("Single '}' encountered in format string") }
                out += "}"
                i += 2
            } else {
                out.unicodeScalars.append(ch)
                i += 1
            }
        }
        return out
    }
}
