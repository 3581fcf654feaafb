// The snapshot file: a saved prompt prefix (its units and the context state after them), little-endian.
//
//   header (120 bytes)
//     0   magic "LEAPSNAP"                 8
//     8   format version (u32)             4
//     12  KV element type (u32: 0 F16, 1 F32)
//     16  identity (ModelIdentity.full)    32
//     48  positions (u64)                  number of prefix positions n
//     56  unit bytes (u64)                 size of the units section
//     64  embedding floats (u64)           floats of the embedding rows section
//     72  KV bytes (u64)
//     80  conv floats (u64)
//     88  attention layers (u32), conv layers (u32), conv rows (u32), embedding length (u32)
//     104 payload checksum (u64)           XXH64 of every byte after the header
//     112 header checksum (u64)            XXH64 of bytes 0..<112
//   payload
//     KV width of each attention layer     u32 × attention layers
//     units                                PrefixUnit encodings, n of them
//     inputs                               i32 × n (token id, or -1 for an embedding row)
//     embedding rows                       f32 × embedding floats
//     KV                                   ContextState.kv
//     conv                                 f32 × conv floats
//
// `decode` checks everything (sizes against the file length and the expected shape, both checksums, the
// identity, every unit and input) before it returns a state; nothing is read from a context or written to
// one here.
import CLeapStateSupport
import LeapCore
import LeapModels

package struct PromptSnapshot: Sendable {
    package var units: [PrefixUnit]
    package var state: ContextState

    package init(units: [PrefixUnit], state: ContextState) {
        self.units = units
        self.state = state
    }
}

package enum SnapshotFormat {
    package static let magic = Array("LEAPSNAP".utf8)
    package static let version = 1
    package static let headerSize = 120
    /// Bounds on what a header may claim, far above any real context (they keep sizes from overflowing).
    static let maxPositions = 1 << 24
    static let maxLayers = 4096
    static let maxWidth = 1 << 20

    /// The size of the largest snapshot of at most `positions` positions of a context of `shape` (every
    /// position a media row, which takes the most bytes): a file larger than this is not one to read.
    package static func maxFileBytes(shape: ContextStateShape, positions: Int) throws -> Int {
        let n = max(0, min(positions, maxPositions))
        let perPosition = 37 + 4 + 4 * shape.embeddingLength    // unit, input, embedding row
        return try headerSize + 4 * shape.kvDims.count + n * perPosition + shape.kvBytes(positions: n) + 4 * shape.convFloats
    }

    /// The file bytes of `snapshot`, computed under `identity`.
    package static func encode(_ snapshot: PromptSnapshot, identity: ModelIdentity) -> [UInt8] {
        let s = snapshot.state
        var payload: [UInt8] = []
        payload.reserveCapacity(s.kv.count + s.conv.count * 4 + s.embeddingRows.count * 4 + s.positions * 45 + 64)
        for d in s.shape.kvDims { appendLE(UInt32(d), into: &payload) }
        let unitsStart = payload.count
        for u in snapshot.units { u.encode(into: &payload) }
        let unitBytes = payload.count - unitsStart
        for i in s.inputs { appendLE(UInt32(bitPattern: i), into: &payload) }
        appendFloats(s.embeddingRows, into: &payload)
        payload.append(contentsOf: s.kv)
        appendFloats(s.conv, into: &payload)

        var header: [UInt8] = magic
        appendLE(UInt32(version), into: &header)
        appendLE(UInt32(s.shape.kvCacheType == .f16 ? 0 : 1), into: &header)
        header.append(contentsOf: identity.full)
        for v in [s.positions, unitBytes, s.embeddingRows.count, s.kv.count, s.conv.count] { appendLE(UInt64(v), into: &header) }
        for v in [s.shape.kvDims.count, s.shape.convLayers, s.shape.convRows, s.shape.embeddingLength] {
            appendLE(UInt32(v), into: &header)
        }
        appendLE(checksum(payload[...]), into: &header)
        appendLE(checksum(header[...]), into: &header)
        return header + payload
    }

    /// Reads a snapshot computed under `identity` for a context of `shape`; throws LeapError(.format) naming
    /// what is wrong (another model or build, a damaged or truncated file, a foreign file).
    package static func decode(_ bytes: [UInt8], identity: ModelIdentity, shape: ContextStateShape) throws -> PromptSnapshot {
        try bytes.withUnsafeBytes { try decode($0, identity: identity, shape: shape) }
    }

    package static func decode(_ b: UnsafeRawBufferPointer, identity: ModelIdentity, shape: ContextStateShape) throws -> PromptSnapshot {
        guard b.count >= headerSize else { throw LeapError(.format, "snapshot is \(b.count) bytes, shorter than its \(headerSize)-byte header") }
        guard b.prefix(8).elementsEqual(magic) else { throw LeapError(.format, "not a libleap snapshot (no LEAPSNAP magic)") }
        guard checksum(UnsafeRawBufferPointer(rebasing: b[0..<112])) == u64(b, 112) else {
            throw LeapError(.format, "snapshot header is damaged (checksum mismatch)")
        }
        guard u32(b, 8) == version else { throw LeapError(.format, "snapshot format version \(u32(b, 8)) is not \(version)") }
        guard b[16..<48].elementsEqual(identity.full) else {
            throw LeapError(.format, "snapshot was computed by another model or another build of the kernels (this process: kernel path \(identity.kernelPath))")
        }
        let kvType = u32(b, 12)
        guard kvType <= 1 else { throw LeapError(.format, "snapshot KV element type \(kvType) is unknown") }
        let positions = u64(b, 48), unitBytes = u64(b, 56), embeddingFloats = u64(b, 64), kvBytes = u64(b, 72), convFloats = u64(b, 80)
        let nKV = Int(u32(b, 88)), nConv = Int(u32(b, 92)), convRows = Int(u32(b, 96)), E = Int(u32(b, 100))
        guard positions <= UInt64(maxPositions), nKV <= maxLayers, nConv <= maxLayers, convRows <= 16, E <= maxWidth else {
            throw LeapError(.format, "snapshot header sizes are out of range")
        }
        let n = Int(positions)
        // Every section's size follows from the header; the file must be exactly their sum.
        guard unitBytes <= UInt64(n) * 37, embeddingFloats <= UInt64(n) * UInt64(E), convFloats == UInt64(nConv * convRows * E),
              kvBytes <= UInt64(1) << 46 else {
            throw LeapError(.format, "snapshot section sizes do not fit its \(n) positions")
        }
        let expected = headerSize + 4 * nKV + Int(unitBytes) + 4 * n + 4 * Int(embeddingFloats) + Int(kvBytes) + 4 * Int(convFloats)
        guard b.count == expected else {
            throw LeapError(.format, "snapshot is \(b.count) bytes; its header describes \(expected) (truncated or padded)")
        }
        guard checksum(UnsafeRawBufferPointer(rebasing: b[headerSize...])) == u64(b, 104) else {
            throw LeapError(.format, "snapshot data is damaged (checksum mismatch)")
        }
        var o = headerSize
        var kvDims: [Int] = []
        for _ in 0..<nKV { kvDims.append(Int(u32(b, o))); o += 4 }
        let fileShape = ContextStateShape(kvCacheType: kvType == 0 ? .f16 : .f32, kvDims: kvDims, convLayers: nConv,
                                          convRows: convRows, embeddingLength: E)
        guard fileShape == shape else {
            throw LeapError(.format, "snapshot state shape \(fileShape) is not this context's \(shape)")
        }
        // Units.
        var units: [PrefixUnit] = []
        units.reserveCapacity(n)
        let unitsEnd = o + Int(unitBytes)
        while o < unitsEnd {
            switch b[o] {
            case PrefixUnit.tokenTag:
                guard o + 5 <= unitsEnd else { throw LeapError(.format, "snapshot unit \(units.count) is cut off") }
                units.append(.token(Int32(bitPattern: u32(b, o + 1))))
                o += 5
            case PrefixUnit.mediaTag:
                guard o + 37 <= unitsEnd else { throw LeapError(.format, "snapshot unit \(units.count) is cut off") }
                units.append(.media(digest: Array(b[(o + 1)..<(o + 33)]), row: Int(u32(b, o + 33))))
                o += 37
            default:
                throw LeapError(.format, "snapshot unit \(units.count) has unknown tag \(b[o])")
            }
        }
        guard units.count == n else { throw LeapError(.format, "snapshot holds \(units.count) units for \(n) positions") }
        var inputs: [Int32] = []
        inputs.reserveCapacity(n)
        for i in 0..<n {
            let v = Int32(bitPattern: u32(b, o))
            o += 4
            switch units[i] {
            case .token(let t) where t == v && t >= 0: break
            case .media where v == InferenceContext.embeddingInput: break
            default: throw LeapError(.format, "snapshot input \(i) (\(v)) does not match its unit")
            }
            inputs.append(v)
        }
        let rows = floats(b, at: o, count: Int(embeddingFloats))
        o += 4 * Int(embeddingFloats)
        let kv = Array(b[o..<(o + Int(kvBytes))])
        o += Int(kvBytes)
        let conv = floats(b, at: o, count: Int(convFloats))
        let state = ContextState(shape: fileShape, positions: n, inputs: inputs, embeddingRows: rows, kv: kv, conv: conv)
        try state.validate()
        return PromptSnapshot(units: units, state: state)
    }

    /// `bytes` with both checksums recomputed (fuzzing reaches the checks behind them this way); bytes
    /// shorter than a header are returned as they are.
    package static func resealed(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.count >= headerSize else { return bytes }
        var out = bytes
        var payload: [UInt8] = []
        appendLE(checksum(bytes[headerSize...]), into: &payload)
        out.replaceSubrange(104..<112, with: payload)
        var header: [UInt8] = []
        appendLE(checksum(out[0..<112]), into: &header)
        out.replaceSubrange(112..<120, with: header)
        return out
    }

    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        lk_xxh64(bytes.baseAddress, bytes.count, 0x6c_6561_7073_6e61)
    }

    static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        bytes.withUnsafeBytes { checksum($0) }
    }

    private static func u32(_ b: UnsafeRawBufferPointer, _ o: Int) -> UInt32 { UInt32(littleEndian: b.loadUnaligned(fromByteOffset: o, as: UInt32.self)) }
    private static func u64(_ b: UnsafeRawBufferPointer, _ o: Int) -> UInt64 { UInt64(littleEndian: b.loadUnaligned(fromByteOffset: o, as: UInt64.self)) }

    private static func floats(_ b: UnsafeRawBufferPointer, at o: Int, count: Int) -> [Float] {
        // Never with capacity 0: that array is the shared empty singleton, whose count the initializer
        // would write (a data race with every thread reading an empty array).
        guard count > 0 else { return [] }
        return [Float](unsafeUninitializedCapacity: count) { out, initialized in
            if let dst = out.baseAddress, let src = b.baseAddress { UnsafeMutableRawPointer(dst).copyMemory(from: src + o, byteCount: count * 4) }
            initialized = count
        }
    }

    private static func appendFloats(_ v: [Float], into out: inout [UInt8]) {
        v.withUnsafeBytes { out.append(contentsOf: $0) }
    }
}
