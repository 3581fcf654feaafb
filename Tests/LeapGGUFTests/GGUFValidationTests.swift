import LeapCore
import LeapGGUF
import Testing

/// Malformed files, built byte by byte: each must give a precise error, never a crash or a huge allocation.
@Suite struct GGUFValidationTests {
    typealias B = GGUFBuilder

    /// A valid file with a bit of everything.
    func sample() -> GGUFBuilder {
        var b = GGUFBuilder()
        b.add("general.architecture", B.string("llama"))
        b.add("llama.block_count", B.u32(30))
        b.add("tokenizer.ggml.tokens", B.array(8, 3, B.str("a") + B.str("bc") + B.str("")))
        b.add("tokenizer.ggml.scores", B.array(6, 2, B.le(Float(1).bitPattern) + B.le(Float(-2).bitPattern)))
        b.addTensor("token_embd.weight", [64, 2], .q8_0)
        b.addTensor("output_norm.weight", [64], .f32)
        return b
    }

    func error(_ bytes: [UInt8]) -> LeapError? { leapError { _ = try GGUFFile(bytes: bytes) } }

    @Test func validSampleParses() throws {
        let f = try GGUFFile(bytes: sample().bytes())
        #expect(f.tensors.map(\.name) == ["token_embd.weight", "output_norm.weight"])
        #expect(try f.stringArray("tokenizer.ggml.tokens") == ["a", "bc", ""])
        #expect(try f.floatArray("tokenizer.ggml.scores") == [1, -2])
        #expect(f.tensors[1].offset == 160)  // 4 blocks of 34 bytes = 136, padded to 160
        var v2 = sample()
        v2.version = 2
        #expect(try GGUFFile(bytes: v2.bytes()).version == 2)
        #expect(try GGUFFile(bytes: GGUFBuilder().bytes()).tensors.isEmpty)
    }

    @Test func badMagic() {
        #expect(error([]) == LeapError(.format, "not a GGUF file: the file is empty"))
        let e = error(Array("GGU".utf8))
        #expect(e?.message == "not a GGUF file: expected the magic \"GGUF\", found bytes 47 47 55; this looks like a text file (the file has only 3 bytes)")
        func looksLike(_ bytes: [UInt8], _ what: String) {
            let e = error(bytes + [UInt8](repeating: 0, count: 40))
            #expect(e?.kind == .format)
            #expect(e?.message.contains(what) == true, "\(e?.message ?? "no error")")
        }
        looksLike([0x50, 0x4B, 0x03, 0x04], "ZIP archive")
        looksLike(Array("version https://git-lfs.github.com/spec/v1\n".utf8), "Git LFS pointer")
        looksLike(B.le(UInt64(19)) + Array("{\"__metadata__\":{}}".utf8), "safetensors")
        looksLike(Array("tjgg".utf8), "legacy llama.cpp GGJT")
        looksLike(Array("<!DOCTYPE html>".utf8), "HTML")
        looksLike([0x7F, 0x45, 0x4C, 0x46], "ELF")
        looksLike([0x1F, 0x8B, 0x08], "gzip")
        #expect(error([0xDE, 0xAD, 0xBE, 0xEF] + [UInt8](repeating: 0, count: 40))?.message
            == "not a GGUF file: expected the magic \"GGUF\", found bytes DE AD BE EF 00 00 00 00")
    }

    @Test func unsupportedVersions() {
        for (v, text) in [(UInt32(1), "GGUF version 1 is not supported"), (4, "GGUF version 4 is not supported"),
                          (0x0300_0000, "big-endian GGUF file (version 3 stored byte-swapped)")] {
            var b = sample()
            b.version = v
            let e = error(b.bytes())
            #expect(e?.kind == .unsupported)
            #expect(e?.message.contains(text) == true, "\(e?.message ?? "")")
        }
    }

    /// Cutting a valid file at any byte gives a format error naming a field (and never crashes).
    @Test func truncatedAtEveryOffset() {
        let full = sample().bytes()
        for n in 0..<full.count {
            let e = error(Array(full.prefix(n)))
            #expect(e?.kind == .format, "prefix \(n): \(e?.message ?? "no error")")
        }
        #expect(error(Array(full.prefix(10)))?.message
            == "truncated GGUF file: tensor count at offset 8 needs 8 bytes, but only 2 remain (file size 10)")
        // Inside the key string of the second entry.
        let keyAt = 24 + 8 + "general.architecture".count + 4 + 8 + "llama".count
        #expect(error(Array(full.prefix(keyAt + 8 + 3)))?.message
            == "truncated or corrupt GGUF file: length of key of metadata entry 1 at offset \(keyAt) is 17, but only 3 bytes remain in the file (room for at most 3)")
        // Missing tensor data.
        let e = error(Array(full.dropLast(10)))
        #expect(e?.message.contains("tensor 'output_norm.weight' (F32 [64]): data [") == true)
        #expect(e?.message.contains("extends past the end of the file") == true)
    }

    @Test func countsBoundedByFileSize() {
        var b = sample()
        b.tensorCountOverride = UInt64.max
        #expect(error(b.bytes())?.message.contains("tensor count at offset 8 is 18446744073709551615, but only") == true)
        b = sample()
        b.kvCountOverride = 1 << 40
        #expect(error(b.bytes())?.message.contains("metadata entry count at offset 16 is 1099511627776") == true)
        b = GGUFBuilder()
        b.add("huge.strings", B.array(8, 1 << 60, []))
        #expect(error(b.bytes())?.message.contains("element count of value of metadata key 'huge.strings'") == true)
        b = GGUFBuilder()
        b.add("huge.floats", B.array(6, UInt64.max, B.le(UInt32(0))))
        #expect(error(b.bytes())?.kind == .format)
        b = GGUFBuilder()
        b.kv.append((Array("k".utf8), B.le(UInt32(8)) + B.le(UInt64.max)))
        #expect(error(b.bytes())?.message.contains("length of value of metadata key 'k'") == true)
        b = GGUFBuilder()
        b.addTensor("big", [1 << 40, 1 << 40], .f32, data: [])
        #expect(error(b.bytes())?.message == "tensor 'big': element count of shape [1099511627776, 1099511627776] overflows")
        b = GGUFBuilder()
        b.addTensor("big", [1 << 20, 1 << 20], .f32, data: [])
        #expect(error(b.bytes())?.message.contains("extends past the end of the file") == true)
    }

    @Test func tensorRules() {
        var b = GGUFBuilder()
        b.tensors.append(.init(name: "blk.0.attn_q.weight", ne: [32, 4], type: 20, data: []))
        #expect(error(b.bytes()) == LeapError(.unsupported,
            "tensor 'blk.0.attn_q.weight' has ggml type IQ4_NL (id 20, at offset 71), which libleap does not support"))
        b = GGUFBuilder()
        b.tensors.append(.init(name: "t", ne: [32], type: 99, data: []))
        #expect(error(b.bytes())?.message.contains("ggml type unknown (id 99") == true)

        b = GGUFBuilder()
        b.addTensor("t", [33, 2], .q4_0, data: [UInt8](repeating: 0, count: 36))
        #expect(error(b.bytes()) == LeapError(.format, "tensor 't' (Q4_0): ne[0] = 33 is not a multiple of the block size 32"))

        b = GGUFBuilder()
        b.tensors.append(.init(name: "t", ne: [1, 1, 1, 1, 1], type: 0, data: [0, 0, 0, 0]))
        #expect(error(b.bytes()) == LeapError(.format, "tensor 't': n_dims is 5 at offset 33, at most 4 are supported"))

        b = GGUFBuilder()
        b.addTensor("a", [8], .f32)
        b.addTensor("b", [8], .f32, offset: 16)
        #expect(error(b.bytes()) == LeapError(.format,
            "tensor 'b': data offset 16 (at offset 82) is not a multiple of the alignment 32"))

        b = GGUFBuilder()
        b.addTensor("a", [16], .f32)
        b.addTensor("b", [8], .f32, offset: 32)
        #expect(error(b.bytes())?.message.hasPrefix("tensors 'a' [") == true)
        #expect(error(b.bytes())?.message.contains("and 'b' [") == true)
        #expect(error(b.bytes())?.message.hasSuffix("overlap") == true)

        b = GGUFBuilder()
        b.addTensor("a", [8], .f32)
        b.addTensor("b", [8], .f32, offset: 1 << 40)
        #expect(error(b.bytes())?.message.contains("tensor 'b': data offset 1099511627776 is past the end of the file") == true)

        b = GGUFBuilder()
        b.addTensor("same", [8], .f32)
        b.addTensor("same", [8], .f32)
        #expect(error(b.bytes())?.message.hasPrefix("duplicate tensor name 'same' (tensor 1 at offset") == true)
    }

    @Test func metadataRules() {
        var b = sample()
        b.add("llama.block_count", B.u32(31))
        #expect(error(b.bytes())?.message.hasPrefix("duplicate metadata key 'llama.block_count' (entry 4 at offset") == true)

        b = GGUFBuilder()
        b.add("bad", B.le(UInt32(13)) + [0, 0, 0, 0])
        #expect(error(b.bytes()) == LeapError(.format, "metadata key 'bad': unknown value type id 13 at offset 35 (expected 0...12)"))

        b = GGUFBuilder()
        b.add("flag", B.bool(2))
        #expect(error(b.bytes()) == LeapError(.format, "value of metadata key 'flag' at offset 40: BOOL byte is 2, expected 0 or 1"))

        b = GGUFBuilder()
        b.add("general.alignment", B.u64(64))
        #expect(error(b.bytes()) == LeapError(.format, "general.alignment must be a UINT32, found UINT64"))
        b = GGUFBuilder()
        b.add("general.alignment", B.u32(48))
        #expect(error(b.bytes()) == LeapError(.format, "general.alignment must be a power of two, found 48"))
        b = GGUFBuilder()
        b.add("general.alignment", B.u32(0))
        #expect(error(b.bytes())?.message == "general.alignment must be a power of two, found 0")

        // Nesting beyond the depth bound.
        var nested = B.le(UInt32(5)) + B.le(UInt64(0))
        for _ in 0..<20 { nested = B.le(UInt32(9)) + B.le(UInt64(1)) + nested }
        b = GGUFBuilder()
        b.add("deep", B.le(UInt32(9)) + nested)
        #expect(error(b.bytes())?.kind == .unsupported)
        #expect(error(b.bytes())?.message.contains("arrays nested deeper than 8 levels") == true)
    }

    @Test func customAlignment() throws {
        var b = GGUFBuilder()
        b.alignment = 64
        b.add("general.alignment", B.u32(64))
        b.addTensor("a", [8], .f32, data: (0..<32).map { UInt8($0) })
        b.addTensor("b", [4], .f32, data: [0, 0, 0x80, 0x3F] + [0, 0, 0, 0x40] + [0, 0, 0x40, 0x40] + [0, 0, 0x80, 0x40])
        let f = try GGUFFile(bytes: b.bytes())
        #expect(f.alignment == 64 && f.dataOffset % 64 == 0)
        #expect(f.tensors[1].offset == 64)
        #expect(try f.dequantize(f.tensors[1]) == [1, 2, 3, 4])
    }

    @Test func invalidUTF8() {
        var b = GGUFBuilder()
        b.kv.append((Array("ok".utf8), B.le(UInt32(8)) + B.str([0x61, 0xC3, 0x28])))
        #expect(error(b.bytes()) == LeapError(.format,
            "value of metadata key 'ok' at offset 38 is not valid UTF-8 (byte 0xc3 at offset 47)"))
        b = GGUFBuilder()
        b.kv.append(([0xFF], B.u32(1)))
        #expect(error(b.bytes())?.message == "key of metadata entry 0 at offset 24 is not valid UTF-8 (byte 0xff at offset 32)")
        b = GGUFBuilder()
        b.tensors.append(.init(name: "x", ne: [1], type: 0, data: [0, 0, 0, 0]))
        var bytes = b.bytes()
        bytes[32] = 0x80  // the tensor name
        #expect(error(bytes)?.message == "name of tensor 0 at offset 24 is not valid UTF-8 (byte 0x80 at offset 32)")
        b = GGUFBuilder()
        b.add("arr", B.array(8, 2, B.str("ok") + B.str([0xED, 0xA0, 0x80])))  // an encoded surrogate
        #expect(error(b.bytes())?.message.hasPrefix("element 1 of value of metadata key 'arr'") == true)
    }

    @Test func fileErrors() {
        #expect(leapError { _ = try GGUFFile(path: "/nonexistent/model.gguf") }
            == LeapError(.io, "cannot open GGUF file '/nonexistent/model.gguf': No such file or directory"))
        #expect(leapError { _ = try GGUFFile(path: ggufFixtures) }?.message.contains("is not a regular file (it is a directory)") == true)
        #expect(leapError { _ = try GGUFFile(path: "/dev/null") }?.kind == .io)
    }
}
