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
