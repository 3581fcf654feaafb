// leap-fuzz: bounded-time mutation fuzzing of every parser that untrusted bytes reach.
//
//   leap-fuzz <target[,target...]|all> [seconds] [seed-file...]
//   leap-fuzz --write-seeds <target> <dir>     writes the target's built-in seeds as files (corpus making)
//
// Each target is a function that feeds bytes to one parser; it must return (or throw a LeapError that
// the harness swallows) on any input — a crash, trap or hang is the bug being hunted. Inputs start from
// the seeds (files given on the command line plus the target's built-in seeds) and are mutated with the
// classic byte-level operators (flip, insert, delete, duplicate, splice, interesting integers).
// The RNG is seeded from LEAP_FUZZ_SEED (default 1) so a failing run can be replayed. The targets are
// LeapFuzzTargets', which leap-libfuzzer runs under coverage guidance too; scripts/test.sh runs this driver
// on the targets too slow per input for libFuzzer (whole models, tokenizers).
import Glibc
import LeapCore
import LeapFuzzTargets

func usage() -> Never {
    let names = fuzzTargets.keys.sorted().joined(separator: ", ")
    fputs("usage: leap-fuzz <target[,target...]|all> [seconds] [seed-file...]\n"
          + "       leap-fuzz --write-seeds <target> <dir>\ntargets: \(names)\n", stderr)
    exit(2)
}

let args = CommandLine.arguments
guard args.count >= 2 else { usage() }
if args[1] == "--write-seeds" {
    guard args.count == 4, let target = fuzzTargets[args[2]] else { usage() }
    for (i, seed) in target.seeds.enumerated() {
        let path = args[3] + "/builtin-\(i)"
        guard let f = fopen(path, "wb") else { fputs("cannot write \(path)\n", stderr); exit(1) }
        _ = seed.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, f) }
        fclose(f)
    }
    exit(0)
}
let seconds = args.count >= 3 ? (Double(args[2]) ?? 10) : 10
let extraSeeds = args.dropFirst(3).compactMap { readFile($0) }
let chosen: [String] = args[1] == "all" ? fuzzTargets.keys.sorted() : args[1].split(separator: ",").map(String.init)
installCrashHandler()
var rng = FuzzRNG(seed: UInt64(getenv("LEAP_FUZZ_SEED").flatMap { UInt64(String(cString: $0)) } ?? 1))

for name in chosen {
    guard let target = fuzzTargets[name] else { usage() }
    let budget = seconds / Double(chosen.count)
    fputs("fuzz \(name)...\n", stderr)  // unbuffered: names the target if it crashes
    let runs = fuzz(target, seeds: target.seeds + extraSeeds, seconds: budget, rng: &rng)
    print("fuzz \(name): \(runs) inputs in \(String(format1(budget))) s, no crash")
}
