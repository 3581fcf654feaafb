/// Turns a stream of byte pieces into text that never splits a UTF-8 character: bytes of an incomplete
/// sequence wait for the next piece; invalid bytes become U+FFFD.
package struct UTF8Assembler {
    private var pending: [UInt8] = []

    package init() {}

    /// The complete characters available after appending `bytes`.
    package mutating func append(_ bytes: [UInt8]) -> String {
        pending.append(contentsOf: bytes)
        let cut = completePrefixLength(pending)
        guard cut > 0 else { return "" }
        let out = String(decoding: pending[0..<cut], as: UTF8.self)
        pending.removeFirst(cut)
        return out
    }

    /// Whatever is left (an incomplete sequence at the very end becomes U+FFFD).
    package mutating func flush() -> String {
        defer { pending.removeAll() }
        return pending.isEmpty ? "" : String(decoding: pending, as: UTF8.self)
    }

    /// Length of the longest prefix that does not end inside a (possibly valid) multi-byte sequence.
    private func completePrefixLength(_ b: [UInt8]) -> Int {
        var i = b.count
        // Look back at most 3 bytes for the lead byte of the last sequence.
        var back = 0
        while back < 3 && i - back - 1 >= 0 && b[i - back - 1] & 0xC0 == 0x80 { back += 1 }
        let leadIndex = i - back - 1
        guard leadIndex >= 0 else { return b.count }  // only continuation bytes: let the decoder replace them
        let lead = b[leadIndex]
        let need: Int
        if lead & 0x80 == 0 { need = 1 } else if lead & 0xE0 == 0xC0 { need = 2 } else if lead & 0xF0 == 0xE0 { need = 3 } else if lead & 0xF8 == 0xF0 { need = 4 } else { need = 1 }
        if back + 1 < need { i = leadIndex }  // incomplete: hold it back
        return i
    }
}
