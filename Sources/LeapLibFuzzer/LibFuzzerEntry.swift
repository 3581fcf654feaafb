// leap-libfuzzer: the LeapFuzzTargets under libFuzzer's coverage guidance.
//
// Built by scripts/fuzz.sh with `swift build --sanitize=fuzzer --sanitize=address -Xswiftc -DLIBFUZZER`:
// libFuzzer supplies main() and calls LLVMFuzzerTestOneInput; the target is chosen by LEAP_FUZZ_TARGET
// (one binary for every target: one instrumented build). Run it with SWIFT_BACKTRACE=enable=no, or Swift's
// crash handler trips over ASan's and the process lingers for minutes.
//
// In an ordinary build (no LIBFUZZER) the same file is a replay program:
//   leap-libfuzzer <target> <file|dir>...   runs every input once (a crash reproduces; exit 0 otherwise)
import Glibc
import LeapCore
import LeapFuzzTargets

nonisolated(unsafe) private var selected: FuzzTarget?

/// The target named by LEAP_FUZZ_TARGET; exits with the list of names otherwise.
private func targetFromEnvironment() -> FuzzTarget {
    let name = getenv("LEAP_FUZZ_TARGET").map { String(cString: $0) } ?? ""
    guard let target = fuzzTargets[name] else {
        fputs("leap-libfuzzer: set LEAP_FUZZ_TARGET to one of \(fuzzTargets.keys.sorted().joined(separator: ", "))\n", stderr)
        exit(2)
    }
    return target
}

@_cdecl("LLVMFuzzerTestOneInput")
public func leapFuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    if selected == nil { selected = targetFromEnvironment() }
    let bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    selected?.run(bytes)
    return 0
}

#if !LIBFUZZER
@main
struct Replay {
    static func main() {
        let args = CommandLine.arguments
        guard args.count >= 3, let target = fuzzTargets[args[1]] else {
            fputs("usage: leap-libfuzzer <target> <file|dir>...\ntargets: \(fuzzTargets.keys.sorted().joined(separator: ", "))\n", stderr)
            exit(2)
        }
        var count = 0
        for path in args.dropFirst(2) {
            for file in regularFiles(in: path) ?? [path] {
                guard let bytes = readFile(file) else { fputs("cannot read \(file)\n", stderr); exit(1) }
                target.run(bytes)
                count += 1
            }
        }
        print("\(args[1]): \(count) inputs, no crash")
    }
}
#endif
