import LeapJSON
import LeapMessages

/// Writes function calls and JSON values as Python source (the inverse of `PythonLiteralParser`).
enum PythonicWriter {
    /// `name(a=1, b="x")`, keyword arguments sorted by name (LEAP's order).
    static func call(_ c: LeapFunctionCall) -> String {
        let args = c.arguments.entries.sorted { $0.key.unicodeScalars.lexicographicallyPrecedes($1.key.unicodeScalars) }
        var out = c.name + "("
        for (i, e) in args.enumerated() {
            if i > 0 { out += ", " }
            out += e.key + "="
            write(e.value, to: &out)
        }
        return out + ")"
    }

    static func write(_ v: JSONValue, to out: inout String) {
        switch v {
        case .null: out += "None"
        case .bool(let b): out += b ? "True" : "False"
        case .int(let i): out += String(i)
        case .double(let d): out += d.isFinite ? JSONValue.formatDouble(d) : "None"
        // JSON string escapes (\" \\ \n \t \uXXXX ...) are all valid Python escapes with the same meaning.
        case .string(let s): JSONValue.writeString(s, to: &out, ensureASCII: false)
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += ", " }
                write(item, to: &out)
            }
            out += "]"
        case .object(let o):
            out += "{"
            for (i, e) in o.entries.enumerated() {
                if i > 0 { out += ", " }
                JSONValue.writeString(e.key, to: &out, ensureASCII: false)
                out += ": "
                write(e.value, to: &out)
            }
            out += "}"
        }
    }
}
