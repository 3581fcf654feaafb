/// JSON serialization.
///
/// `.compact` is the wire format of the messages API (`{"a":1,"b":[2,3]}`). `.python` reproduces Python's
/// `json.dumps(x, ensure_ascii=False)` (separators `", "` and `": "`, optional indent and sorted keys),
/// which is what Hugging Face chat templates get from `tojson`.
package struct JSONWriteOptions: Sendable {
    package var itemSeparator: String
    package var keySeparator: String
    package var indent: Int?
    package var sortKeys: Bool
    package var ensureASCII: Bool
    /// Write non-finite doubles as Python does (`NaN`, `Infinity`, `-Infinity`) instead of `null`.
    package var allowNaN = false

    package init(itemSeparator: String = ",", keySeparator: String = ":", indent: Int? = nil,
                 sortKeys: Bool = false, ensureASCII: Bool = false) {
        self.itemSeparator = itemSeparator
        self.keySeparator = keySeparator
        self.indent = indent
        self.sortKeys = sortKeys
        self.ensureASCII = ensureASCII
    }

    package static let compact = JSONWriteOptions()
    /// Python's `json.dumps` defaults (with `ensure_ascii=False`); with an indent, Python drops the space
    /// before newlines, so the item separator becomes ",".
    package static func python(indent: Int? = nil, sortKeys: Bool = false, ensureASCII: Bool = false) -> JSONWriteOptions {
        JSONWriteOptions(itemSeparator: indent == nil ? ", " : ",", keySeparator: ": ", indent: indent,
                         sortKeys: sortKeys, ensureASCII: ensureASCII)
    }
}

extension JSONValue {
    /// Serializes the value. Non-finite doubles (which JSON cannot represent) are written as `null`.
    package func serialized(_ options: JSONWriteOptions = .compact) -> String {
        var out = ""
        write(to: &out, options, level: 0)
        return out
    }

    private func write(to out: inout String, _ o: JSONWriteOptions, level: Int) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d):
            if !d.isFinite && o.allowNaN {
                out += d.isNaN ? "NaN" : (d < 0 ? "-Infinity" : "Infinity")
            } else {
                out += JSONValue.formatDouble(d)
            }
        case .string(let s): JSONValue.writeString(s, to: &out, ensureASCII: o.ensureASCII)
        case .array(let items):
            if items.isEmpty { out += "[]"; return }
            out += "["
            for (i, v) in items.enumerated() {
                if i > 0 { out += o.itemSeparator }
                newline(&out, o, level + 1)
                v.write(to: &out, o, level: level + 1)
            }
            newline(&out, o, level)
            out += "]"
        case .object(let obj):
            if obj.isEmpty { out += "{}"; return }
            out += "{"
            var entries = obj.entries
            if o.sortKeys { entries.sort { $0.key.unicodeScalars.lexicographicallyPrecedes($1.key.unicodeScalars) } }
            for (i, e) in entries.enumerated() {
                if i > 0 { out += o.itemSeparator }
                newline(&out, o, level + 1)
                JSONValue.writeString(e.key, to: &out, ensureASCII: o.ensureASCII)
                out += o.keySeparator
                e.value.write(to: &out, o, level: level + 1)
            }
            newline(&out, o, level)
            out += "}"
        }
    }

    private func newline(_ out: inout String, _ o: JSONWriteOptions, _ level: Int) {
        guard let indent = o.indent else { return }
        out += "\n"
        out += String(repeating: " ", count: indent * level)
    }

    /// Shortest round-tripping representation, formatted like Python's `repr(float)`:
    /// `1.0`, `0.1`, `1e-05`, `1e+16`.
    package static func formatDouble(_ d: Double) -> String {
        guard d.isFinite else { return "null" }
        if d == 0 { return d.sign == .minus ? "-0.0" : "0.0" }
        // Swift's description is the shortest round-trip digits; only the exponent style differs.
        let s = d.description  // e.g. "1e-05", "1.5e+20", "0.0001", "12345.0"
        var mantissa = s
        var exponent: Int? = nil
        if let e = s.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            mantissa = String(s[s.startIndex..<e])
            exponent = Int(s[s.index(after: e)...])
        }
        // Recover digits and decimal exponent, then apply Python's rule: scientific iff exp < -4 or exp >= 16.
        var negative = false
        if mantissa.hasPrefix("-") { negative = true; mantissa.removeFirst() }
        let parts = mantissa.split(separator: ".", omittingEmptySubsequences: false)
        let intPart = String(parts[0])
        let fracPart = parts.count > 1 ? String(parts[1]) : ""
        var digits = intPart + fracPart
        var pointPos = intPart.count + (exponent ?? 0)  // position of the decimal point within digits
        // Strip leading zeros.
        while digits.count > 1 && digits.first == "0" { digits.removeFirst(); pointPos -= 1 }
        // Strip trailing zeros.
        while digits.count > 1 && digits.last == "0" { digits.removeLast() }
        let decExp = pointPos - 1  // exponent of the first significant digit
        var out = negative ? "-" : ""
        if decExp < -4 || decExp >= 16 {
            out += String(digits.first ?? "0")
            if digits.count > 1 { out += "." + digits.dropFirst() }
            out += "e" + (decExp < 0 ? "-" : "+")
            let ae = abs(decExp)
            out += ae < 10 ? "0\(ae)" : "\(ae)"
        } else if pointPos <= 0 {
            out += "0." + String(repeating: "0", count: -pointPos) + digits
        } else if pointPos >= digits.count {
            out += digits + String(repeating: "0", count: pointPos - digits.count) + ".0"
        } else {
            let idx = digits.index(digits.startIndex, offsetBy: pointPos)
            out += digits[..<idx] + "." + digits[idx...]
        }
        return out
    }

    package static func writeString(_ s: String, to out: inout String, ensureASCII: Bool) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            default:
                if scalar.value < 0x20 || (ensureASCII && scalar.value == 0x7F) {
                    out += "\\u" + hex4(scalar.value)
                } else if ensureASCII && scalar.value > 0x7F {
                    if scalar.value >= 0x10000 {
                        let v = scalar.value - 0x10000
                        out += "\\u" + hex4(0xD800 + (v >> 10)) + "\\u" + hex4(0xDC00 + (v & 0x3FF))
                    } else {
                        out += "\\u" + hex4(scalar.value)
                    }
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}
