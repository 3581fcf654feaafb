// GPT-2's byte ↔ unicode table: byte-level BPE vocabularies spell every raw byte as one printable
// codepoint. Bytes 33–126, 161–172 and 174–255 stand for themselves; the other 68 bytes (controls,
// space, DEL, 127–160, 173) map in increasing order to U+0100…U+0143 (space → `Ġ` U+0120, `\n` → `Ċ`).
enum ByteLevel {
    /// [256] codepoint that spells each byte.
    static let byteToCodepoint: [UInt32] = {
        var table = [UInt32](repeating: 0, count: 256)
        var next: UInt32 = 256
        for b in 0..<256 {
            if (33...126).contains(b) || (161...172).contains(b) || (174...255).contains(b) {
                table[b] = UInt32(b)
            } else {
                table[b] = next
                next += 1
            }
        }
        return table
    }()

    /// [0x144] byte spelled by each codepoint below U+0144, or -1.
    static let codepointToByte: [Int16] = {
        var table = [Int16](repeating: -1, count: 0x144)
        for (b, cp) in byteToCodepoint.enumerated() { table[Int(cp)] = Int16(b) }
        return table
    }()

    /// Decodes a vocabulary spelling into raw bytes; nil when a character is outside the table (such a
    /// token can never be produced by byte-level BPE, only matched as a special token).
    static func decode(_ spelled: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(spelled.count)
        let ok = spelled.withUnsafeBufferPointer { p -> Bool in
            var i = 0
            while i < p.count {
                let (cp, n) = decodeLenientUTF8(p, i)
                guard cp < 0x144, case let b = codepointToByte[Int(cp)], b >= 0 else { return false }
                // Reject encodings that would not re-encode to the same bytes (e.g. overlong forms).
                if (cp < 0x80 && n != 1) || (cp >= 0x80 && n != 2) { return false }
                out.append(UInt8(b))
                i += n
            }
            return true
        }
        return ok ? out : nil
    }

    /// Whether `spelled` is made only of table characters, each in its shortest UTF-8 form.
    static func isSpelling(_ spelled: UnsafeBufferPointer<UInt8>) -> Bool {
        var i = 0
        while i < spelled.count {
            let (cp, n) = decodeLenientUTF8(spelled, i)
            guard cp < 0x144, codepointToByte[Int(cp)] >= 0, (cp < 0x80) == (n == 1) else { return false }
            i += n
        }
        return true
    }

    /// Appends the vocabulary spelling of raw bytes to `out`.
    @inline(__always)
    static func encode(_ raw: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
        for b in raw { appendUTF8(byteToCodepoint[Int(b)], to: &out) }
    }

    /// Encodes raw bytes into their vocabulary spelling.
    static func encode(_ raw: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(raw.count * 2)
        for b in raw { appendUTF8(byteToCodepoint[Int(b)], to: &out) }
        return out
    }
}
