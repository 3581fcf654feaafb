import LeapCore

/// Everything the header section of a GGUF file says, validated against the file size.
struct GGUFLayout {
    var version: UInt32
    var metadata: GGUFMetadata
    var tensors: [GGUFTensorInfo]
    var alignment: Int
    /// Absolute offset of the data section (tensor offsets are relative to it).
    var dataOffset: Int
}

let ggufDefaultAlignment = 32
/// Nested arrays are legal but unused; a depth bound keeps hostile files from exhausting the stack.
let ggufMaxArrayDepth = 8
/// Smallest encodings, used to bound counts by the bytes that remain.
private let minKVBytes = 8 + 4 + 1  // key length, value type, 1-byte value
private let minTensorInfoBytes = 8 + 4 + 4 + 8  // name length, n_dims (0), type, offset

/// Parses and validates the GGUF header, metadata and tensor infos of `bytes` (the whole file).
func parseGGUF(_ bytes: UnsafeRawBufferPointer) throws -> GGUFLayout {
    var r = GGUFByteReader(bytes)
    try checkMagic(bytes)
    try r.skip(4, "magic")
    let version = try r.u32("version")
    try checkVersion(version)

    let nTensors = try r.count("tensor count", minElementSize: minTensorInfoBytes)
    let nKV = try r.count("metadata entry count", minElementSize: minKVBytes)

    // Metadata.
    var metadata = GGUFMetadata()
    for i in 0..<nKV {
        let keyAt = r.offset
        let key = try r.string("key of metadata entry \(i)")
        let typeAt = r.offset
        let typeID = try r.u32("value type of metadata key '\(key)'")
        guard let type = GGUFValueType(rawValue: typeID) else {
            throw LeapError.format("metadata key '\(key)': unknown value type id \(typeID) at offset \(typeAt) (expected 0...12)")
        }
        let value = try readValue(type, &r, depth: 0) { "value of metadata key '\(key)'" }
        guard metadata.append(key, value) else {
            throw LeapError.format(
                "duplicate metadata key '\(key)' (entry \(i) at offset \(keyAt); first seen as entry \(metadata.position(of: key) ?? 0))")
        }
    }

    // general.alignment: UINT32, a power of two.
    var alignment = ggufDefaultAlignment
    if let a = metadata["general.alignment"] {
        guard case .uint32(let v) = a else {
            throw LeapError.format("general.alignment must be a UINT32, found \(a.typeDescription)")
        }
        guard v > 0, v & (v - 1) == 0 else {
            throw LeapError.format("general.alignment must be a power of two, found \(v)")
        }
        alignment = Int(v)
    }

    // Tensor infos.
    var tensors: [GGUFTensorInfo] = []
    tensors.reserveCapacity(nTensors)  // bounded by the file size (see count())
    var rawOffsets: [UInt64] = []
    rawOffsets.reserveCapacity(nTensors)
    var byName: [String: Int] = [:]
    for i in 0..<nTensors {
        let nameAt = r.offset
        let name = try r.string("name of tensor \(i)")
        if let first = byName[name] {
            throw LeapError.format("duplicate tensor name '\(name)' (tensor \(i) at offset \(nameAt); first seen as tensor \(first))")
        }
        byName[name] = i
        let nDimsAt = r.offset
        let nDims = try r.u32("n_dims of tensor '\(name)'")
        guard nDims <= 4 else {
            throw LeapError.format("tensor '\(name)': n_dims is \(nDims) at offset \(nDimsAt), at most 4 are supported")
        }
        var ne: [Int] = []
        for d in 0..<Int(nDims) {
            let at = r.offset
            let v = try r.u64("ne[\(d)] of tensor '\(name)'")
            guard v <= UInt64(Int64.max) else {
                throw LeapError.format("tensor '\(name)': ne[\(d)] = \(v) at offset \(at) is too large")
            }
            ne.append(Int(v))
        }
        let typeAt = r.offset
        let typeID = try r.u32("type of tensor '\(name)'")
        let offsetAt = r.offset
        let offset = try r.u64("data offset of tensor '\(name)'")
        guard let type = GGMLType(rawValue: typeID) else {
            throw LeapError.unsupported(
                "tensor '\(name)' has ggml type \(GGMLType.name(forID: typeID)) (id \(typeID), at offset \(typeAt)), which libleap does not support")
        }
        guard (ne.first ?? 1) % type.blockSize == 0 else {
            throw LeapError.format(
                "tensor '\(name)' (\(type.name)): ne[0] = \(ne.first ?? 1) is not a multiple of the block size \(type.blockSize)")
        }
        guard offset % UInt64(alignment) == 0 else {
            throw LeapError.format(
                "tensor '\(name)': data offset \(offset) (at offset \(offsetAt)) is not a multiple of the alignment \(alignment)")
        }
        // Sizes, with overflow checks: elements = Π ne, bytes = rowBytes(ne0) · Π ne[1...].
        var elements = 1
        var rows = 1
        for (d, n) in ne.enumerated() {
            let (e, o1) = elements.multipliedReportingOverflow(by: n)
            let (rw, o2) = d == 0 ? (rows, false) : rows.multipliedReportingOverflow(by: n)
            guard !o1, !o2 else { throw LeapError.format("tensor '\(name)': element count of shape \(ne) overflows") }
            elements = e
            rows = rw
        }
        let rowBytes = type.rowBytes(ne.first ?? 1) ?? Int.max
        let (byteCount, o3) = rowBytes.multipliedReportingOverflow(by: rows)
        guard !o3, rowBytes != Int.max else { throw LeapError.format("tensor '\(name)': byte size of shape \(ne) overflows") }
        tensors.append(GGUFTensorInfo(
            name: name, ne: ne, type: type, offset: 0, fileOffset: 0, byteCount: elements == 0 ? 0 : byteCount,
            elementCount: elements))
        rawOffsets.append(offset)
    }

    // Data section: aligned after the tensor infos.
    let infosEnd = r.offset
    let (padded, o4) = infosEnd.addingReportingOverflow(alignment - 1)
    guard !o4 else { throw LeapError.format("data section offset overflows (alignment \(alignment))") }
    let dataOffset = padded / alignment * alignment

    // Place the tensors and check that each lies inside the file.
    for i in tensors.indices {
        let t = tensors[i]
        guard rawOffsets[i] <= UInt64(bytes.count) else {
            throw LeapError.format(
                "tensor '\(t.name)': data offset \(rawOffsets[i]) is past the end of the file (data section starts at \(dataOffset), file size \(bytes.count))")
        }
        let start = dataOffset + Int(rawOffsets[i])
        let (end, o5) = start.addingReportingOverflow(t.byteCount)
        guard !o5, end <= bytes.count else {
            throw LeapError.format(
                "tensor '\(t.name)' (\(t.type.name) \(t.ne)): data [\(start), \(o5 ? "overflow" : String(end))) extends past the end of the file (size \(bytes.count)); the file is truncated or corrupt")
        }
        tensors[i].offset = Int(rawOffsets[i])
        tensors[i].fileOffset = start
    }
    try checkNoOverlap(tensors)

    return GGUFLayout(version: version, metadata: metadata, tensors: tensors, alignment: alignment, dataOffset: dataOffset)
}

/// Tensors must not share bytes (a writer never produces that; a crafted file could alias weights).
private func checkNoOverlap(_ tensors: [GGUFTensorInfo]) throws {
    let sorted = tensors.filter { $0.byteCount > 0 }.sorted { $0.fileOffset < $1.fileOffset }
    for (a, b) in zip(sorted, sorted.dropFirst()) where b.fileOffset < a.fileOffset + a.byteCount {
        throw LeapError.format(
            "tensors '\(a.name)' [\(a.fileOffset), \(a.fileOffset + a.byteCount)) and '\(b.name)' [\(b.fileOffset), \(b.fileOffset + b.byteCount)) overlap")
    }
}

/// One metadata value of a known type (arrays recurse up to `ggufMaxArrayDepth`).
private func readValue(_ type: GGUFValueType, _ r: inout GGUFByteReader, depth: Int, _ field: () -> String) throws -> GGUFValue {
    switch type {
    case .uint8: return .uint8(try r.u8(field()))
    case .int8: return .int8(Int8(bitPattern: try r.u8(field())))
    case .uint16: return .uint16(try r.u16(field()))
    case .int16: return .int16(Int16(bitPattern: try r.u16(field())))
    case .uint32: return .uint32(try r.u32(field()))
    case .int32: return .int32(Int32(bitPattern: try r.u32(field())))
    case .float32: return .float32(Float(bitPattern: try r.u32(field())))
    case .uint64: return .uint64(try r.u64(field()))
    case .int64: return .int64(Int64(bitPattern: try r.u64(field())))
    case .float64: return .float64(Double(bitPattern: try r.u64(field())))
    case .bool:
        let at = r.offset
        let b = try r.u8(field())
        guard b <= 1 else { throw LeapError.format("\(field()) at offset \(at): BOOL byte is \(b), expected 0 or 1") }
        return .bool(b == 1)
    case .string: return .string(try r.string(field()))
    case .array: return .array(try readArray(&r, depth: depth, field))
    }
}

private func readArray(_ r: inout GGUFByteReader, depth: Int, _ field: () -> String) throws -> GGUFArray {
    let typeAt = r.offset
    let typeID = try r.u32("element type of \(field())")
    guard let type = GGUFValueType(rawValue: typeID) else {
        throw LeapError.format("\(field()): unknown array element type id \(typeID) at offset \(typeAt) (expected 0...12)")
    }
    if type == .array && depth + 1 >= ggufMaxArrayDepth {
        throw LeapError.unsupported("\(field()): arrays nested deeper than \(ggufMaxArrayDepth) levels (at offset \(typeAt))")
    }
    // Bound the count by the smallest possible element encoding before allocating anything.
    let minSize = type.fixedSize ?? (type == .string ? 8 : 12)
    let n = try r.count("element count of \(field())", minElementSize: minSize)
    switch type {
    case .uint8: return .uint8(try r.integers(UInt8.self, n, field()))
    case .int8: return .int8(try r.integers(Int8.self, n, field()))
    case .uint16: return .uint16(try r.integers(UInt16.self, n, field()))
    case .int16: return .int16(try r.integers(Int16.self, n, field()))
    case .uint32: return .uint32(try r.integers(UInt32.self, n, field()))
    case .int32: return .int32(try r.integers(Int32.self, n, field()))
    case .uint64: return .uint64(try r.integers(UInt64.self, n, field()))
    case .int64: return .int64(try r.integers(Int64.self, n, field()))
    case .float32: return .float32(try r.integers(UInt32.self, n, field()).map { Float(bitPattern: $0) })
    case .float64: return .float64(try r.integers(UInt64.self, n, field()).map { Double(bitPattern: $0) })
    case .bool:
        let at = r.offset
        let raw = try r.integers(UInt8.self, n, field())
        if let bad = raw.firstIndex(where: { $0 > 1 }) {
            throw LeapError.format("element \(bad) of \(field()) at offset \(at + bad): BOOL byte is \(raw[bad]), expected 0 or 1")
        }
        return .bool(raw.map { $0 == 1 })
    case .string:
        var out: [String] = []
        out.reserveCapacity(n)
        for i in 0..<n { out.append(try r.string("element \(i) of \(field())")) }
        return .string(out)
    case .array:
        var out: [GGUFArray] = []
        out.reserveCapacity(n)
        for i in 0..<n { out.append(try readArray(&r, depth: depth + 1) { "element \(i) of \(field())" }) }
        return .array(out)
    }
}

private func checkVersion(_ version: UInt32) throws {
    switch version {
    case 2, 3: return
    case 1:
        throw LeapError.unsupported("GGUF version 1 is not supported (only versions 2 and 3); re-convert the model with a recent llama.cpp")
    default:
        let swapped = version.byteSwapped
        if swapped == 2 || swapped == 3 {
            throw LeapError.unsupported(
                "this is a big-endian GGUF file (version \(swapped) stored byte-swapped); only little-endian GGUF files are supported")
        }
        throw LeapError.unsupported("GGUF version \(version) is not supported (only versions 2 and 3)")
    }
}

/// Checks the "GGUF" magic; when it is wrong, says what the file looks like if that is recognisable.
private func checkMagic(_ bytes: UnsafeRawBufferPointer) throws {
    if bytes.count == 0 { throw LeapError.format("not a GGUF file: the file is empty") }
    let head = Array(bytes.prefix(32))
    if head.starts(with: Array("GGUF".utf8)) { return }
    let hex = head.prefix(8).map { b in (b < 16 ? "0" : "") + String(b, radix: 16, uppercase: true) }.joined(separator: " ")
    var message = "not a GGUF file: expected the magic \"GGUF\", found bytes \(hex)"
    if let what = recogniseFormat(head, count: bytes.count) { message += "; this looks like \(what)" }
    if bytes.count < 4 { message += " (the file has only \(bytes.count) bytes)" }
    throw LeapError.format(message)
}

private func recogniseFormat(_ head: [UInt8], count: Int) -> String? {
    func starts(_ s: String) -> Bool { head.starts(with: Array(s.utf8)) }
    func starts(_ b: [UInt8]) -> Bool { head.starts(with: b) }
    if starts("FUGG") { return "a GGUF file with a byte-swapped magic" }
    for (magic, name) in [("ggml", "GGML"), ("ggmf", "GGMF"), ("ggjt", "GGJT"), ("ggla", "GGLA")] {
        if starts(magic) || starts(String(magic.reversed())) {
            return "a legacy llama.cpp \(name) model (pre-GGUF); convert it to GGUF with llama.cpp's conversion scripts"
        }
    }
    if starts("version https://git-lfs") { return "a Git LFS pointer file, not the model itself (run `git lfs pull`)" }
    if starts([0x50, 0x4B, 0x03, 0x04]) { return "a ZIP archive (e.g. a PyTorch checkpoint), not a GGUF model" }
    if starts([0x7F, 0x45, 0x4C, 0x46]) { return "an ELF executable or library" }
    if starts([0x1F, 0x8B]) { return "a gzip-compressed file; decompress it first" }
    if starts([0x28, 0xB5, 0x2F, 0xFD]) { return "a zstd-compressed file; decompress it first" }
    if starts([0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00]) { return "an xz-compressed file; decompress it first" }
    if starts("BZh") { return "a bzip2-compressed file; decompress it first" }
    if starts([0x93]) && starts([0x93] + Array("NUMPY".utf8)) { return "a NumPy .npy array" }
    if starts("RIFF") { return "a RIFF (e.g. WAV) file" }
    if starts([0x80]) && head.count > 1 && (2...5).contains(head[1]) { return "a Python pickle (e.g. a PyTorch .bin checkpoint)" }
    if head.count >= 9 && head[8] == UInt8(ascii: "{") {
        // safetensors: u64 little-endian header length, then a JSON object.
        var n: UInt64 = 0
        for i in (0..<8).reversed() { n = n << 8 | UInt64(head[i]) }
        if n > 0 && n < UInt64(count) { return "a safetensors file, not a GGUF model" }
    }
    let text = head.drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 || $0 == 0xEF || $0 == 0xBB || $0 == 0xBF }
    if let c = text.first {
        if c == UInt8(ascii: "<") { return "an HTML or XML document (a failed download?)" }
        if c == UInt8(ascii: "{") || c == UInt8(ascii: "[") { return "a JSON text" }
    }
    if head.allSatisfy({ $0 == 0x09 || $0 == 0x0A || $0 == 0x0D || (0x20...0x7E).contains($0) }) { return "a text file" }
    return nil
}
