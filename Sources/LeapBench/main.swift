// leap-bench: benchmark programs that print figures (never assertions). Build with `-c release`.
//
//   leap-bench <suite> [suite options...]
//
// Each suite prints one line per measurement, "name: value unit (details)", and, where the reference
// implementation is installed (soxr, llama.cpp via llama-cpp-python), its figure in the same run.
// BENCHMARKS.md holds the figures per machine and the command of each.
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
    "speculative": benchSpeculative,
]

let argv = CommandLine.arguments
guard argv.count >= 2, let suite = suites[argv[1]] else {
    let names = suites.keys.sorted().joined(separator: ", ")
    fputs("""
        usage: leap-bench <suite> [options]
        suites: \(names)
        environment:
          LEAP_LLAMA_PYTHON  the Python with llama-cpp-python 0.3.36 (and mtmd, numpy, gguf) that runs the
                             llama.cpp comparisons and writes the random-weight files; default python3
          LEAP_MODELS_DIR    where the tokenizer suite finds its default models; default ./models
          LEAP_KERNEL_ISA    force a kernel path (scalar, avx2, avx-vnni, avx512, ...; see README)

        """, stderr)
    exit(2)
}
suite(Array(argv.dropFirst(2)))
