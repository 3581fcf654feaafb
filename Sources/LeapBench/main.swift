// leap-bench: benchmark programs that print figures (never assertions). Build with `-c release`.
//
//   leap-bench <suite> [suite options...]
//
// Each suite prints one line per measurement, "name: value unit (details)", and, where the reference
// implementation is installed (soxr, llama.cpp via llama-cpp-python), its figure in the same run.
import Glibc

let suites: [String: ([String]) -> Void] = [
    "json": benchJSON,
    "gguf": benchGGUF,
    "audio": benchAudio,
    "audio-encoder": benchAudioEncoder,
    "toolcalls": benchToolCalls,
    "kernels": benchKernels,
    "model": benchModel,
    "parallel": benchParallel,
    "long-context": benchLongContext,
    "tokenizer": benchTokenizer,
    "template": benchTemplate,
    "grammar": benchGrammar,
    "vision": benchVision,
    "speech": benchSpeech,
    "prompt-cache": benchPromptCache,
    "prompt-cache-write": benchPromptCacheWrite,
]

let argv = CommandLine.arguments
guard argv.count >= 2, let suite = suites[argv[1]] else {
    let names = suites.keys.sorted().joined(separator: ", ")
    fputs("usage: leap-bench <suite> [options]\nsuites: \(names.isEmpty ? "(none yet)" : names)\n", stderr)
    exit(2)
}
suite(Array(argv.dropFirst(2)))
