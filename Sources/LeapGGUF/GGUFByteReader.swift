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
                "\(field()) at offset \(at) is \(raw), but only \(remaining) bytes remain in the file (room for at most \(limit))")
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
        guard let s = String(validating: utf8, as: UTF8.self) else {
            let bad = firstInvalidUTF8Index(utf8)
            throw LeapError.format(
                "\(field()) at offset \(at) is not valid UTF-8 (byte 0x\(String(utf8[bad], radix: 16)) at offset \(offset + bad))")
        }
        offset += n
        return s
    }

    mutating func skip(_ n: Int, _ field: @autoclosure () -> String) throws {
        try need(n, field)
        offset += n
    }

    /// `n` fixed-size little-endian values (the caller has bounded `n` by `remaining`).
    mutating func integers<T: FixedWidthInteger>(_: T.Type, _ n: Int, _ field: @autoclosure () -> String) throws -> [T] {
        let size = MemoryLayout<T>.size
        try need(n * size, field)
        let base = bytes.baseAddress.unsafelyUnwrapped.advanced(by: offset)
        let out = [T](unsafeUninitializedCapacity: n) { buf, initialized in
            for i in 0..<n { buf[i] = T(littleEndian: base.loadUnaligned(fromByteOffset: i * size, as: T.self)) }
            initialized = n
        }
        offset += n * size
        return out
    }
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
