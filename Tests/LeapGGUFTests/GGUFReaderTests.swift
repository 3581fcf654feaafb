import LeapCore
import LeapGGUF
import LeapTestFiles
import Testing

/// random_types.gguf was written by gguf-py's GGUFWriter (scripts/fixtures/make_gguf_fixtures.py).
@Suite struct GGUFReaderTests {
    let file: GGUFFile

    init() throws {
        file = try GGUFFile(path: ggufFixtures + "/random_types.gguf")
    }

    @Test func header() {
        #expect(file.version == 3)
        #expect(file.alignment == 32)
        #expect(file.dataOffset % 32 == 0)
        #expect(file.metadata.keys.first == "general.architecture")
    }

    @Test func metadataOfEveryType() throws {
        let m = file.metadata
        #expect(m["general.architecture"] == .string("test"))
        #expect(m["test.uint8"] == .uint8(200))
        #expect(m["test.int8"] == .int8(-100))
        #expect(m["test.uint16"] == .uint16(65000))
        #expect(m["test.int16"] == .int16(-32000))
        #expect(m["test.uint32"] == .uint32(4_000_000_000))
        #expect(m["test.int32"] == .int32(-2_000_000_000))
        #expect(m["test.float32"] == .float32(0.15625))
        #expect(m["test.bool"] == .bool(true))
        #expect(m["test.string"] == .string("héllo wörld ✓"))
        #expect(m["test.uint64"] == .uint64(18_000_000_000_000_000_000))
        #expect(m["test.int64"] == .int64(-9_000_000_000_000_000_000))
        #expect(m["test.float64"] == .float64(-2.5e-300))
        #expect(m["test.array.int32"] == .array(.int32([1, -2, 3])))
        #expect(m["test.array.uint32"] == .array(.uint32([7, 8, 4_000_000_000])))
        #expect(m["test.array.float32"] == .array(.float32([0.5, -1.25, 3.0])))
        #expect(m["test.array.string"] == .array(.string(["a", "", "ß", "<|im_start|>"])))
        #expect(m["test.array.bool"] == .array(.bool([true, false, true])))
        #expect(m["test.array.nested"] == .array(.array([.int32([1, 2]), .int32([3]), .int32([4, 5, 6])])))
        #expect(m["missing"] == nil)
    }

    @Test func typedAccessors() throws {
        #expect(try file.string("test.string") == "héllo wörld ✓")
        #expect(try file.uint32("test.uint32") == 4_000_000_000)
        #expect(try file.uint32("test.uint8") == 200)
        #expect(try file.int("test.int64") == -9_000_000_000_000_000_000)
        #expect(try file.float("test.float32") == 0.15625)
        #expect(try file.bool("test.bool"))
        #expect(try file.stringArray("test.array.string") == ["a", "", "ß", "<|im_start|>"])
        #expect(try file.int32Array("test.array.int32") == [1, -2, 3])
        #expect(try file.floatArray("test.array.float32") == [0.5, -1.25, 3.0])
        #expect(try file.optionalUInt32("nope") == nil)
        #expect(try file.optionalString("test.string") == "héllo wörld ✓")

        #expect(leapError { _ = try file.uint32("test.string") }
            == LeapError(.modelLoading, "GGUF key test.string: expected UINT32, found STRING"))
        #expect(leapError { _ = try file.string("llama.block_count") }
            == LeapError(.modelLoading, "missing required GGUF key llama.block_count"))
        #expect(leapError { _ = try file.uint32("test.int32") }
            == LeapError(.modelLoading, "GGUF key test.int32: value -2000000000 (INT32) does not fit a UINT32"))
        #expect(leapError { _ = try file.int32Array("test.array.uint32") }
            == LeapError(.modelLoading, "GGUF key test.array.uint32: element 2 = 4000000000 does not fit an INT32"))
        #expect(leapError { _ = try file.stringArray("test.array.int32") }
            == LeapError(.modelLoading, "GGUF key test.array.int32: expected ARRAY[STRING], found ARRAY[INT32]"))
        #expect(leapError { _ = try file.optionalBool("test.uint8") }
            == LeapError(.modelLoading, "GGUF key test.uint8: expected BOOL, found UINT8"))
    }

    @Test func tensorInfos() throws {
        let t = try #require(file.tensor(named: "q4_k.random"))
        #expect(t.type == .q4_K)
        #expect(t.ne == [512, 3])
        #expect(t.elementCount == 1536)
        #expect(t.byteCount == 6 * 144)
        #expect(t.rowCount == 3 && t.rowLength == 512 && t.rowBytes == 288)
        #expect(t.offset % 32 == 0 && t.fileOffset == file.dataOffset + t.offset)
        #expect(file.tensorData(t).count == t.byteCount)
        let t3 = try #require(file.tensor(named: "q8_0.3d"))
        #expect(t3.ne == [64, 3, 2] && t3.rowCount == 6 && t3.ne4 == [64, 3, 2, 1])
        #expect(file.tensor(named: "nope") == nil)
        #expect(leapError { _ = try file.requireTensor("nope") }?.kind == .modelLoading)
    }

    /// Every tensor dequantizes bit-exactly to gguf-py's values (random blocks and quantized normals).
    @Test func dequantizeMatchesGGUFPy() throws {
        let index = try #require(readBytes(ggufFixtures + "/random_types.golden.txt").flatMap { String(validating: $0, as: UTF8.self) })
        let golden = try #require(readBytes(ggufFixtures + "/random_types.golden.bin"))
        var seenTypes = Set<GGMLType>()
        for line in index.split(separator: "\n") where !line.hasPrefix("#") {
            let f = line.split(separator: " ")
            let name = String(f[0]), n = try #require(Int(f[2])), offset = try #require(Int(f[3]))
            let t = try #require(file.tensor(named: name), "tensor \(name)")
            #expect(t.type.name == f[1])
            seenTypes.insert(t.type)
            let expected = (0..<n).map { i in
                Float(bitPattern: UInt32(golden[4 * (offset + i)]) | UInt32(golden[4 * (offset + i) + 1]) << 8
                    | UInt32(golden[4 * (offset + i) + 2]) << 16 | UInt32(golden[4 * (offset + i) + 3]) << 24)
            }
            let all = try file.dequantize(t)
            #expect(all.count == n)
            let mismatches = zip(all, expected).filter { $0.bitPattern != $1.bitPattern }.count
            #expect(mismatches == 0, "\(name): \(mismatches) of \(n) values differ from gguf-py")
            // Rows agree with the whole-tensor dequantization.
            for r in [0, t.rowCount - 1] {
                let row = try file.dequantizeRow(t, r)
                let want = expected[r * t.rowLength..<(r + 1) * t.rowLength]
                #expect(zip(row, want).allSatisfy { $0.bitPattern == $1.bitPattern } && row.count == want.count, "\(name) row \(r)")
            }
        }
        let required: Set<GGMLType> = [.f32, .f16, .bf16, .q4_0, .q4_1, .q5_0, .q5_1, .q8_0, .q2_K, .q3_K, .q4_K, .q5_K, .q6_K, .q8_K]
        #expect(required.isSubset(of: seenTypes))
        #expect(leapError { _ = try file.dequantizeRow(file.tensors[0], file.tensors[0].rowCount) }?.kind == .invalidArgument)
    }

    /// The same bytes parsed from memory give the same result as the mapped file.
    @Test func inMemoryParsingMatchesFile() throws {
        let bytes = try #require(readBytes(ggufFixtures + "/random_types.gguf"))
        let mem = try GGUFFile(bytes: bytes)
        #expect(mem.tensors == file.tensors)
        #expect(mem.metadata.keys == file.metadata.keys)
        for (a, b) in zip(mem.metadata, file.metadata) { #expect(a.value == b.value) }
        #expect(Array(mem.tensorData(mem.tensors[5])) == Array(file.tensorData(file.tensors[5])))
    }

    @Test func bigEndianFileIsRejected() {
        let e = leapError { _ = try GGUFFile(path: ggufFixtures + "/big_endian.gguf") }
        #expect(e?.kind == .unsupported)
        #expect(e?.message.contains("big-endian GGUF file (version 3 stored byte-swapped)") == true)
    }
}

@Suite struct HalfFloatTests {
    /// halfToFloat is exact for all 65536 bit patterns (Swift's Float16 as the independent oracle).
    @Test func allHalfValues() {
        #if arch(x86_64) || arch(arm64)
        for h in 0...UInt16.max {
            let ours = halfToFloat(h)
            let ref = Float(Float16(bitPattern: h))
            if ref.isNaN {
                #expect(ours.isNaN)
            } else {
                #expect(ours.bitPattern == ref.bitPattern, "half 0x\(String(h, radix: 16))")
            }
        }
        #endif
    }
}

@Suite struct UTF8ValidationTests {
    /// The reader's fast validator agrees with the standard library's on edge cases and random bytes.
    @Test func agreesWithStandardLibrary() {
        var cases: [[UInt8]] = [
            [], Array("plain ascii text".utf8), Array("héllo ✓ 😀 ß".utf8),
            [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xE0, 0xA0, 0x80], [0xED, 0xA0, 0x80], [0xED, 0x9F, 0xBF],
            [0xF0, 0x8F, 0xBF, 0xBF], [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF], [0xF4, 0x90, 0x80, 0x80],
            [0xF5, 0x80, 0x80, 0x80], [0xFF], [0x80], [0xE2, 0x82], Array("abcdefgh".utf8) + [0xE2, 0x82],
        ]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
        for _ in 0..<20000 {
            let n = Int(next() % 24)
            // Mostly valid-looking bytes: ASCII, lead bytes and continuation bytes.
            cases.append((0..<n).map { _ in
                switch next() % 4 {
                case 0: return UInt8(next() % 0x80)
                case 1: return UInt8(0x80 + next() % 0x40)
                default: return UInt8(0xC0 + next() % 0x40)
                }
            })
        }
        for bytes in cases {
            let ours = bytes.withUnsafeBufferPointer { isValidUTF8($0) }
            let ref = String(validating: bytes, as: UTF8.self) != nil
            #expect(ours == ref, "\(bytes)")
        }
    }
}

@Suite struct Q8_1Tests {
    /// Q8_1 (activation-only; gguf-py's size table is stale for it): y = d·q, the s field ignored.
    @Test func dequantizesAsDTimesQ() {
        var block: [UInt8] = [0x00, 0x38, 0xFF, 0x7B]  // d = 0.5 (f16), s = 65504 (unused)
        let qs: [Int8] = (0..<32).map { Int8($0 * 8 - 128) }
        block += qs.map { UInt8(bitPattern: $0) }
        #expect(block.count == GGMLType.q8_1.blockBytes)
        var out = [Float](repeating: .nan, count: 32)
        block.withUnsafeBytes { src in
            out.withUnsafeMutableBufferPointer { dequantize(type: .q8_1, src: src.baseAddress!, count: 32, into: $0.baseAddress!) }
        }
        #expect(out == qs.map { Float($0) * 0.5 })
    }
}
