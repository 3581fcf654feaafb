import Glibc
import LeapGGUF
import LeapModels

/// Model loader: any GGUF bytes. A file that loads must evaluate a token and rewind without crashing
/// (garbage weights may give NaN logits, never a trap). Seed: the smallest tiny LFM2 fixture.
let fuzzModel: FuzzTarget = (seeds: modelSeeds(), run: fuzzModelInput)

func fuzzModelInput(_ data: [UInt8]) {
    guard let file = try? GGUFFile(bytes: data), let model = try? LanguageModel.load(file: file, threads: 1),
          let ctx = try? model.makeContext(ContextOptions(contextSize: 8, threads: 1))
    else { return }
    _ = try? ctx.eval(tokens: [0, Int32(model.config.nVocab - 1)])
    _ = try? ctx.logits()
    _ = try? ctx.rewind(to: 1)
    _ = try? ctx.eval(tokens: [1])
}

private func modelSeeds() -> [[UInt8]] {
    var parts = String(#filePath).split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast(3)
    let path = parts.joined(separator: "/") + "/Tests/Fixtures/models/lfm2-tiny-f32.gguf"
    guard let f = fopen(path, "rb") else { return [] }
    defer { fclose(f) }
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = fread(&buf, 1, buf.count, f)
        if n <= 0 { break }
        out.append(contentsOf: buf[0..<n])
    }
    return out.isEmpty ? [] : [out]
}
