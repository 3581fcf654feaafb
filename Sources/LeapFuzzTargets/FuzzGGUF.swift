import Glibc
import LeapGGUF

/// GGUF reader: any bytes, parsed from memory. A file that parses must have every tensor readable and
/// dequantizable (its first and last rows) and every metadata accessor must return or throw.
package let fuzzGGUF: FuzzTarget = (seeds: [ggufSeed(version: 3), ggufSeed(version: 2)], run: fuzzGGUFInput)

func fuzzGGUFInput(_ data: [UInt8]) {
    guard let file = try? GGUFFile(bytes: data) else { return }
    for (key, _) in file.metadata {
        _ = try? file.string(key)
        _ = try? file.uint32(key)
        _ = try? file.float(key)
        _ = try? file.stringArray(key)
        _ = try? file.int32Array(key)
        _ = try? file.floatArray(key)
    }
    for t in file.tensors {
        let data = file.tensorData(t)
        if data.count != t.byteCount {
            fuzzFailure("tensor \(t.name): \(data.count) bytes readable, \(t.byteCount) expected")
        }
        if t.rowCount > 0 && t.rowLength <= 1 << 16 {
            _ = try? file.dequantizeRow(t, 0)
            _ = try? file.dequantizeRow(t, t.rowCount - 1)
        }
    }
}

/// A small valid GGUF with metadata of several types (incl. a string array and a nested array) and two
/// tensors, so that mutations reach every part of the reader.
private func ggufSeed(version: UInt32) -> [UInt8] {
    func le<T: FixedWidthInteger>(_ v: T) -> [UInt8] { withUnsafeBytes(of: v.littleEndian) { Array($0) } }
    func str(_ s: String) -> [UInt8] { le(UInt64(s.utf8.count)) + Array(s.utf8) }
    var out = Array("GGUF".utf8) + le(version) + le(UInt64(2)) + le(UInt64(5))
    out += str("general.architecture") + le(UInt32(8)) + str("llama")
    out += str("general.alignment") + le(UInt32(4)) + le(UInt32(32))
    out += str("llama.block_count") + le(UInt32(4)) + le(UInt32(2))
    out += str("tokenizer.ggml.tokens") + le(UInt32(9)) + le(UInt32(8)) + le(UInt64(3)) + str("a") + str("<s>") + str("é")
    out += str("x.nested") + le(UInt32(9)) + le(UInt32(9)) + le(UInt64(1)) + le(UInt32(6)) + le(UInt64(1)) + le(Float(1).bitPattern)
    // Tensor infos: a Q4_K [256, 2] at 0 and an F32 [4] after it (2·144 = 288 bytes, padded to 288).
    out += str("w") + le(UInt32(2)) + le(UInt64(256)) + le(UInt64(2)) + le(GGMLType.q4_K.rawValue) + le(UInt64(0))
    out += str("n") + le(UInt32(1)) + le(UInt64(4)) + le(GGMLType.f32.rawValue) + le(UInt64(288))
    while out.count % 32 != 0 { out.append(0) }
    var data = [UInt8](repeating: 0x11, count: 288 + 16)
    data[0] = 0x00; data[1] = 0x3C  // d = 1.0
    data[144] = 0x00; data[145] = 0x3C
    return out + data
}
