import Glibc
import LeapCore
import LeapGGUF
import LeapModels

/// Model loader: any GGUF bytes. A file that loads must evaluate a token and rewind without crashing
/// (garbage weights may give NaN logits, never a trap). Seeds: the smallest tiny fixture of each loader path
/// (LFM2; LFM2-MoE routed experts; Qwen2 biases; Llama 3 rope_freqs; Qwen3 Q/K norms with YaRN keys).
package let fuzzModel: FuzzTarget = (seeds: modelSeeds(), run: fuzzModelInput)

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
    let dir = parts.joined(separator: "/") + "/Tests/Fixtures/models/"
    return ["lfm2-tiny-f32", "lfm2moe-tiny-q4_0", "qwen2-tiny-f16", "llama3-tiny-f32", "qwen3-tiny-yarn-f16"].compactMap { readFile(dir + $0 + ".gguf") }
}
