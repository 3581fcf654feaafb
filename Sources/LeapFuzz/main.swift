// leap-fuzz: bounded-time mutation fuzzing of every parser that untrusted bytes reach.
//
//   leap-fuzz <target|all> [seconds] [seed-file...]
//
// Each target is a function that feeds bytes to one parser; it must return (or throw a LeapError that
// the harness swallows) on any input — a crash, trap or hang is the bug being hunted. Inputs start from
// the seeds (files given on the command line plus the target's built-in seeds) and are mutated with the
// classic byte-level operators (flip, insert, delete, duplicate, splice, interesting integers).
// The RNG is seeded from LEAP_FUZZ_SEED (default 1) so a failing run can be replayed.
import Glibc

typealias FuzzTarget = (seeds: [[UInt8]], run: ([UInt8]) -> Void)

let targets: [String: FuzzTarget] = [
    "json": fuzzJSON,
    "message": fuzzMessage,
    "gguf": fuzzGGUF,
    "model": fuzzModel,
    "wav": fuzzWAV,
    "jpeg": fuzzJPEG,
    "toolcalls": fuzzToolCalls,
    "tokenizer": fuzzTokenizer,
    "template": fuzzTemplate,
    "grammar": fuzzGrammar,
]

func usage() -> Never {
    let names = targets.keys.sorted().joined(separator: ", ")
    fputs("usage: leap-fuzz <target|all> [seconds] [seed-file...]\ntargets: \(names)\n", stderr)
    exit(2)
}

let args = CommandLine.arguments
guard args.count >= 2 else { usage() }
let seconds = args.count >= 3 ? (Double(args[2]) ?? 10) : 10
let extraSeeds = args.dropFirst(3).compactMap { readFileBytes($0) }
let chosen: [String] = args[1] == "all" ? targets.keys.sorted() : [args[1]]
installCrashHandler()
var rng = FuzzRNG(seed: UInt64(getenv("LEAP_FUZZ_SEED").flatMap { UInt64(String(cString: $0)) } ?? 1))

for name in chosen {
    guard let target = targets[name] else { usage() }
    let budget = seconds / Double(chosen.count)
    fputs("fuzz \(name)...\n", stderr)  // unbuffered: names the target if it crashes
    let runs = fuzz(target, seeds: target.seeds + extraSeeds, seconds: budget, rng: &rng)
    print("fuzz \(name): \(runs) inputs in \(String(format1(budget))) s, no crash")
}
