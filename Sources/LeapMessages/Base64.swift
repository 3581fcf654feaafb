import LeapCore

/// RFC 4648 base64 (standard alphabet). Decoding is strict: no whitespace or foreign characters; the
/// trailing `=` padding may be omitted.
package enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    private static let decodeTable: [UInt8] = {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabet.enumerated() { t[Int(c)] = UInt8(i) }
        return t
    }()

    package static func encode(_ data: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity((data.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= data.count {
            let v = UInt32(data[i]) << 16 | UInt32(data[i + 1]) << 8 | UInt32(data[i + 2])
            out.append(alphabet[Int(v >> 18 & 63)])
            out.append(alphabet[Int(v >> 12 & 63)])
            out.append(alphabet[Int(v >> 6 & 63)])
            out.append(alphabet[Int(v & 63)])
            i += 3
        }
        let rest = data.count - i
        if rest == 1 {
            let v = UInt32(data[i]) << 16
            out.append(alphabet[Int(v >> 18 & 63)])
            out.append(alphabet[Int(v >> 12 & 63)])
            out.append(UInt8(ascii: "="))
            out.append(UInt8(ascii: "="))
        } else if rest == 2 {
            let v = UInt32(data[i]) << 16 | UInt32(data[i + 1]) << 8
            out.append(alphabet[Int(v >> 18 & 63)])
            out.append(alphabet[Int(v >> 12 & 63)])
            out.append(alphabet[Int(v >> 6 & 63)])
            out.append(UInt8(ascii: "="))
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes `text`; `field` names the JSON field in error messages.
    package static func decode(_ text: String, field: String) throws -> [UInt8] {
        var chars = Array(text.utf8)
        // Strip padding (at most two '=' at the very end).
        var pad = 0
        while pad < 2, let last = chars.last, last == UInt8(ascii: "=") {
            chars.removeLast()
            pad += 1
        }
        if pad > 0 && (chars.count + pad) % 4 != 0 {
            throw LeapError.serialization("\(field): invalid base64 padding")
        }
        var out = [UInt8]()
        out.reserveCapacity(chars.count * 3 / 4)
        var acc: UInt32 = 0
        var bits = 0
        for (i, c) in chars.enumerated() {
            let v = decodeTable[Int(c)]
            if v == 0xFF {
                let shown = c >= 0x20 && c < 0x7F ? "'\(Character(Unicode.Scalar(c)))'" : "byte \(c)"
                throw LeapError.serialization("\(field): invalid base64 character \(shown) at offset \(i)")
            }
            acc = acc << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
            }
        }
        if chars.count % 4 == 1 {
            throw LeapError.serialization("\(field): invalid base64 length (\(text.utf8.count) characters)")
        }
        return out
    }
}
