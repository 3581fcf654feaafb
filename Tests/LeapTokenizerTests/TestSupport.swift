import Foundation
import LeapTokenizer

// Test-only helpers: fixture paths and a minimal GGUF metadata reader for vocabularies.

let repoDir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()
let fixturesDir = repoDir.appendingPathComponent("Tests/Fixtures/tokenizer")

/// llama.cpp's ggml-vocab-*.gguf files (scripts/fetch-vocabs.sh), or nil.
let vocabsDir: URL? = {
    var candidates: [String] = []
    if let d = ProcessInfo.processInfo.environment["LEAP_VOCABS_DIR"] { candidates.append(d) }
    if let d = ProcessInfo.processInfo.environment["LEAP_MODELS_DIR"] { candidates.append(d + "/vocabs") }
    candidates.append(repoDir.appendingPathComponent("models/vocabs").path)
    return candidates.map { URL(fileURLWithPath: $0) }.first {
        FileManager.default.fileExists(atPath: $0.appendingPathComponent("ggml-vocab-gpt-2.gguf").path)
    }
}()

/// The real models (scripts/fetch-models.sh), or nil.
let modelsDir: URL? = {
    var candidates: [String] = []
    if let d = ProcessInfo.processInfo.environment["LEAP_MODELS_DIR"] { candidates.append(d) }
    candidates.append(repoDir.appendingPathComponent("models").path)
    return candidates.map { URL(fileURLWithPath: $0) }.first {
        FileManager.default.fileExists(atPath: $0.appendingPathComponent("SmolLM2-135M-Instruct.Q4_1.gguf").path)
    }
}()

enum TestGGUFError: Error { case bad(String) }

/// Metadata values of a GGUF file (tensors are not read).
struct TestGGUF {
    enum Value {
        case int(Int64), uint(UInt64), float(Double), bool(Bool), string([UInt8]), array([Value])
    }
    var kv: [String: Value] = [:]

    init(path: String) throws {
        guard let h = FileHandle(forReadingAtPath: path) else { throw TestGGUFError.bad("cannot open \(path)") }
        defer { try? h.close() }
        // Metadata sits at the start; read enough of it (vocabularies are a few MB).
        let data = [UInt8](h.readData(ofLength: 64 << 20))
        var r = Reader(bytes: data)
        guard try r.u32() == 0x4655_4747 else { throw TestGGUFError.bad("not a GGUF file") }
        let version = try r.u32()
        guard version >= 2 else { throw TestGGUFError.bad("GGUF v\(version) unsupported") }
        _ = try r.u64()
        let nKV = try r.u64()
        for _ in 0..<nKV {
            let key = String(decoding: try r.string(), as: UTF8.self)
            let type = try r.u32()
            kv[key] = try r.value(type)
        }
    }

    struct Reader {
        var bytes: [UInt8]
        var pos = 0
        mutating func take(_ n: Int) throws -> ArraySlice<UInt8> {
            guard pos + n <= bytes.count else { throw TestGGUFError.bad("truncated") }
            defer { pos += n }
            return bytes[pos..<(pos + n)]
        }
        mutating func u64() throws -> UInt64 {
            try take(8).reversed().reduce(0) { $0 << 8 | UInt64($1) }
        }
        mutating func u32() throws -> UInt32 { UInt32(try take(4).reversed().reduce(0) { $0 << 8 | UInt64($1) }) }
        mutating func string() throws -> [UInt8] { Array(try take(Int(try u64()))) }
        mutating func value(_ type: UInt32) throws -> Value {
            switch type {
            case 0: return .uint(UInt64(try take(1).first!))
            case 1: return .int(Int64(Int8(bitPattern: try take(1).first!)))
            case 2: return .uint(UInt64(try take(2).reversed().reduce(0) { $0 << 8 | UInt64($1) }))
            case 3: return .int(Int64(Int16(truncatingIfNeeded: try take(2).reversed().reduce(0) { $0 << 8 | UInt64($1) })))
            case 4: return .uint(UInt64(try u32()))
            case 5: return .int(Int64(Int32(bitPattern: try u32())))
            case 6: return .float(Double(Float(bitPattern: try u32())))
            case 7: return .bool(try take(1).first! != 0)
            case 8: return .string(try string())
            case 9:
                let t = try u32()
                let n = Int(try u64())
                var a: [Value] = []
                a.reserveCapacity(n)
                for _ in 0..<n { a.append(try value(t)) }
                return .array(a)
            case 10: return .uint(try u64())
            case 11: return .int(Int64(bitPattern: try u64()))
            case 12: return .float(Double(bitPattern: try u64()))
            default: throw TestGGUFError.bad("unknown GGUF type \(type)")
            }
        }
    }

    func string(_ k: String) -> String? {
        if case .string(let s)? = kv[k] { return String(decoding: s, as: UTF8.self) }
        return nil
    }
    func uint32(_ k: String) -> UInt32? {
        switch kv[k] {
        case .uint(let v)?: return UInt32(truncatingIfNeeded: v)
        case .int(let v)?: return UInt32(truncatingIfNeeded: v)
        default: return nil
        }
    }
    func bool(_ k: String) -> Bool? {
        if case .bool(let b)? = kv[k] { return b }
        return nil
    }
    func array(_ k: String) -> [Value]? {
        if case .array(let a)? = kv[k] { return a }
        return nil
    }

    var vocabulary: TokenizerVocabulary {
        var v = TokenizerVocabulary(
            model: string("tokenizer.ggml.model") ?? "", pre: string("tokenizer.ggml.pre"),
            tokens: (array("tokenizer.ggml.tokens") ?? []).map { if case .string(let s) = $0 { return s } else { return [] } })
        v.tokenTypes = array("tokenizer.ggml.token_type")?.map { if case .int(let i) = $0 { return Int32(i) } else { return 0 } }
        v.scores = array("tokenizer.ggml.scores")?.map { if case .float(let f) = $0 { return Float(f) } else { return 0 } }
        v.merges = array("tokenizer.ggml.merges")?.map { if case .string(let s) = $0 { return s } else { return [] } }
        v.bosID = uint32("tokenizer.ggml.bos_token_id")
        v.eosID = uint32("tokenizer.ggml.eos_token_id")
        v.eotID = uint32("tokenizer.ggml.eot_token_id")
        v.eomID = uint32("tokenizer.ggml.eom_token_id")
        v.unknownID = uint32("tokenizer.ggml.unknown_token_id")
        v.separatorID = uint32("tokenizer.ggml.seperator_token_id")
        v.paddingID = uint32("tokenizer.ggml.padding_token_id")
        v.maskID = uint32("tokenizer.ggml.mask_token_id")
        v.addBOS = bool("tokenizer.ggml.add_bos_token")
        v.addEOS = bool("tokenizer.ggml.add_eos_token")
        v.addSpacePrefix = bool("tokenizer.ggml.add_space_prefix")
        v.modelName = string("general.name")
        return v
    }
}

/// llama.cpp's .inp / .out golden pairs.
func readInpOut(_ base: URL) throws -> [(text: [UInt8], ids: [Int32])] {
    let inp = [UInt8](try Data(contentsOf: URL(fileURLWithPath: base.path + ".inp")))
    let out = String(decoding: try Data(contentsOf: URL(fileURLWithPath: base.path + ".out")), as: UTF8.self)
    let sep = Array("\n__ggml_vocab_test__\n".utf8)
    var texts: [[UInt8]] = []
    var pos = 0
    while pos < inp.count {
        var next = -1
        var i = pos
        while i + sep.count <= inp.count {
            if inp[i..<(i + sep.count)].elementsEqual(sep) { next = i; break }
            i += 1
        }
        if next < 0 { texts.append(Array(inp[pos...])); break }
        texts.append(Array(inp[pos..<next]))
        pos = next + sep.count
    }
    let lines = out.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    return texts.enumerated().map { i, t in
        let ids = i < lines.count ? lines[i].split(separator: " ").compactMap { Int32($0) } : []
        return (t, ids)
    }
}
