// An all-F32 copy of a GGUF file, built in memory: the same keys (their bytes copied) and tensors, each
// dequantized to F32. It stands for a 10 MB fixture that is not committed: the mtmd goldens of
// scripts/fixtures/make_audio_encoder_f32_mtmd_goldens.py were made from the same copy written by gguf-py.
import LeapGGUF
import LeapTestFiles

struct MalformedGGUF: Error { var reason: String }

func f32Copy(of path: String) throws -> GGUFFile {
    guard let bytes = readBytes(path) else { throw FixtureMissing(path: path) }
    let source = try GGUFFile(path: path)
    let kvEnd = try endOfKeyValues(bytes)
    func u32(_ v: UInt32) -> [UInt8] { withUnsafeBytes(of: v.littleEndian, Array.init) }
    func u64(_ v: UInt64) -> [UInt8] { withUnsafeBytes(of: v.littleEndian, Array.init) }
    var out = Array(bytes[0..<kvEnd])  // header (magic, version, counts) and every key
    var data: [UInt8] = []
    let alignment = source.alignment
    for t in source.tensors {
        while data.count % alignment != 0 { data.append(0) }
        out += u64(UInt64(t.name.utf8.count)) + Array(t.name.utf8) + u32(UInt32(t.ne.count))
        for n in t.ne { out += u64(UInt64(n)) }
        out += u32(0) + u64(UInt64(data.count))  // GGML_TYPE_F32, offset in the data section
        for v in try source.dequantize(t) { data += u32(v.bitPattern) }
    }
    while out.count % alignment != 0 { out.append(0) }
    return try GGUFFile(bytes: out + data)
}

/// Offset of the first tensor info: the 24-byte header, then the key-value pairs, walked by type.
private func endOfKeyValues(_ b: [UInt8]) throws -> Int {
    var at = 24
    func u64() throws -> Int {
        guard at + 8 <= b.count else { throw MalformedGGUF(reason: "truncated at \(at)") }
        var v: UInt64 = 0
        for i in 0..<8 { v |= UInt64(b[at + i]) << (8 * UInt64(i)) }
        at += 8
        return Int(v)
    }
    func u32() throws -> Int {
        guard at + 4 <= b.count else { throw MalformedGGUF(reason: "truncated at \(at)") }
        let v = Int(b[at]) | Int(b[at + 1]) << 8 | Int(b[at + 2]) << 16 | Int(b[at + 3]) << 24
        at += 4
        return v
    }
    func skipValue(_ type: Int) throws {
        switch type {
        case 0, 1, 7: at += 1           // u8, i8, bool
        case 2, 3: at += 2              // u16, i16
        case 4, 5, 6: at += 4           // u32, i32, f32
        case 10, 11, 12: at += 8        // u64, i64, f64
        case 8: at += try u64()         // string
        case 9:                         // array: element type, count, elements
            let element = try u32(), count = try u64()
            for _ in 0..<count { try skipValue(element) }
        default: throw MalformedGGUF(reason: "value type \(type) at \(at)")
        }
    }
    let n = b.count >= 24 ? Int(b[16]) | Int(b[17]) << 8 | Int(b[18]) << 16 | Int(b[19]) << 24 : 0
    for _ in 0..<n {
        at += try u64()  // key
        try skipValue(try u32())
    }
    return at
}
