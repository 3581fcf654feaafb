import LeapCore

/// A bounds-checked little-endian cursor over the GGUF bytes. Every read names the field it is reading so
/// that a truncated or corrupt file reports "what, where": `field` is only evaluated on the error path.
struct GGUFByteReader {
    let bytes: UnsafeRawBufferPointer
    private(set) var offset: Int = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var remaining: Int { bytes.count - offset }

    /// Throws unless `n` more bytes exist at the cursor.
    func need(_ n: Int, _ field: () -> String) throws {
        guard n <= remaining else {
            throw LeapError.format(
                "truncated GGUF file: \(field()) at offset \(offset) needs \(n) bytes, but only \(remaining) remain (file size \(bytes.count))")
        }
    }

    private mutating func load<T: FixedWidthInteger>(_: T.Type, _ field: () -> String) throws -> T {
        try need(MemoryLayout<T>.size, field)
        // bytes.baseAddress is non-nil: need() passed with a non-zero size.
        let v = T(littleEndian: bytes.baseAddress.unsafelyUnwrapped.loadUnaligned(fromByteOffset: offset, as: T.self))
        offset += MemoryLayout<T>.size
        return v
    }

    mutating func u8(_ field: @autoclosure () -> String) throws -> UInt8 { try load(UInt8.self, field) }
    mutating func u16(_ field: @autoclosure () -> String) throws -> UInt16 { try load(UInt16.self, field) }
    mutating func u32(_ field: @autoclosure () -> String) throws -> UInt32 { try load(UInt32.self, field) }
    mutating func u64(_ field: @autoclosure () -> String) throws -> UInt64 { try load(UInt64.self, field) }

    /// A u64 count or size that must fit an Int and describe at most `remaining / minElementSize` elements:
    /// never allocate from an unchecked header value.
    mutating func count(_ field: @autoclosure () -> String, minElementSize: Int) throws -> Int {
        let at = offset
        let raw = try u64(field())
        let limit = minElementSize == 0 ? remaining : remaining / minElementSize
        guard raw <= UInt64(limit) else {
            throw LeapError.format(
                "truncated or corrupt GGUF file: \(field()) at offset \(at) is \(raw), but only \(remaining) bytes remain in the file (room for at most \(limit))")
        }
        return Int(raw)
    }

    /// A gguf-string: u64 length + UTF-8 bytes (no NUL).
    mutating func string(_ field: @autoclosure () -> String) throws -> String {
        let at = offset
        let n = try count("length of \(field())", minElementSize: 1)
        guard n > 0 else { return "" }
        let start = bytes.baseAddress.unsafelyUnwrapped.advanced(by: offset).assumingMemoryBound(to: UInt8.self)
        let utf8 = UnsafeBufferPointer(start: start, count: n)
        // Validate with our own loop, then build the String without a second check: String(validating:)
        // is generic and costs ~3x more on a 262k-token vocabulary.
        guard isValidUTF8(utf8) else {
            let bad = firstInvalidUTF8Index(utf8)
            throw LeapError.format(
                "\(field()) at offset \(at) is not valid UTF-8 (byte 0x\(String(utf8[bad], radix: 16)) at offset \(offset + bad))")
        }
        offset += n
        return String(decoding: utf8, as: UTF8.self)
    }

    mutating func skip(_ n: Int, _ field: @autoclosure () -> String) throws {
        try need(n, field)
        offset += n
    }

    /// `n` fixed-size little-endian values (the caller has bounded `n` by `remaining`).
    mutating func integers<T: FixedWidthInteger>(_: T.Type, _ n: Int, _ field: @autoclosure () -> String) throws -> [T] {
        let size = MemoryLayout<T>.size
        try need(n * size, field)
        // Not through unsafeUninitializedCapacity: with capacity 0 it writes the count of the storage all
        // empty arrays share, which races with another thread doing the same.
        if n == 0 { return [] }
        let base = bytes.baseAddress.unsafelyUnwrapped.advanced(by: offset)
        let out = [T](unsafeUninitializedCapacity: n) { buf, initialized in
            for i in 0..<n { buf[i] = T(littleEndian: base.loadUnaligned(fromByteOffset: i * size, as: T.self)) }
            initialized = n
        }
        offset += n * size
        return out
    }
}

/// Strict UTF-8 validation (no overlong forms, no surrogates, nothing above U+10FFFF), with an ASCII fast path.
@inline(__always)
package func isValidUTF8(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
    let n = b.count
    guard let p = b.baseAddress else { return true }
    var i = 0
    while i < n {
        // 8 ASCII bytes at a time.
        if i + 8 <= n, UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
            i += 8
            continue
        }
        let c = p[i]
        if c < 0x80 { i += 1; continue }
        let len: Int
        var lo: UInt8 = 0x80, hi: UInt8 = 0xBF  // range of the second byte
        switch c {
        case 0xC2...0xDF: len = 2
        case 0xE0: len = 3; lo = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: len = 3
        case 0xED: len = 3; hi = 0x9F  // no surrogates
        case 0xF0: len = 4; lo = 0x90
        case 0xF1...0xF3: len = 4
        case 0xF4: len = 4; hi = 0x8F  // ≤ U+10FFFF
        default: return false
        }
        guard i + len <= n, (lo...hi).contains(p[i + 1]) else { return false }
        for k in 2..<len where p[i + k] & 0xC0 != 0x80 { return false }
        i += len
    }
    return true
}

/// Index of the first byte that starts an invalid UTF-8 sequence (only called on invalid input).
func firstInvalidUTF8Index(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
    var parser = Unicode.UTF8.ForwardParser()
    var it = bytes.makeIterator()
    var index = 0
    while true {
        switch parser.parseScalar(from: &it) {
        case .valid(let scalar): index += scalar.count
        case .error(let length): _ = length; return min(index, max(0, bytes.count - 1))
        case .emptyInput: return max(0, bytes.count - 1)
        }
    }
}
