import Glibc
import LeapFuzzTargets

/// xorshift64*: tiny, fast and reproducible.
struct FuzzRNG {
    private var state: UInt64
    init(seed: UInt64) { state = seed == 0 ? 0x9E37_79B9_7F4A_7C15 : seed }
    mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 0x2545_F491_4F6C_DD1D
    }
    mutating func below(_ n: Int) -> Int { n <= 1 ? 0 : Int(next() % UInt64(n)) }
}

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

func format1(_ x: Double) -> String {
    let tenths = Int((x * 10).rounded())
    return "\(tenths / 10).\(tenths % 10)"
}

private let interesting: [UInt64] = [0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF, UInt64.max]

/// One random mutation of `input`, sometimes splicing in part of `other`.
func mutate(_ input: [UInt8], other: [UInt8], rng: inout FuzzRNG) -> [UInt8] {
    var d = input
    let rounds = 1 + rng.below(4)
    for _ in 0..<rounds {
        switch rng.below(8) {
        case 0 where !d.isEmpty:  // flip a bit
            let i = rng.below(d.count)
            d[i] ^= UInt8(1 << rng.below(8))
        case 1 where !d.isEmpty:  // random byte
            d[rng.below(d.count)] = UInt8(truncatingIfNeeded: rng.next())
        case 2:  // insert random bytes
            let at = rng.below(d.count + 1)
            let n = 1 + rng.below(8)
            d.insert(contentsOf: (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }, at: at)
        case 3 where d.count > 1:  // delete a range
            let at = rng.below(d.count)
            let n = 1 + rng.below(min(16, d.count - at))
            d.removeSubrange(at..<at + n)
        case 4 where !d.isEmpty:  // duplicate a range
            let at = rng.below(d.count)
            let n = 1 + rng.below(min(32, d.count - at))
            d.insert(contentsOf: d[at..<at + n], at: rng.below(d.count + 1))
        case 5 where d.count >= 8:  // interesting little-endian integer
            let v = interesting[rng.below(interesting.count)]
            let width = [1, 2, 4, 8][rng.below(4)]
            let at = rng.below(d.count - width + 1)
            for k in 0..<width { d[at + k] = UInt8(truncatingIfNeeded: v >> (8 * UInt64(k))) }
        case 6 where !other.isEmpty:  // splice
            let from = rng.below(other.count)
            let n = 1 + rng.below(min(64, other.count - from))
            let at = rng.below(d.count + 1)
            d.insert(contentsOf: other[from..<from + n], at: at)
        case 7 where d.count > 1:  // truncate
            d.removeLast(rng.below(d.count))
        default:
            d.append(UInt8(truncatingIfNeeded: rng.next()))
        }
    }
    if d.count > 1 << 20 { d.removeLast(d.count - (1 << 20)) }
    return d
}

/// The input being run, for the crash handler (read there with async-signal-safe calls only).
var crashInput: UnsafeRawBufferPointer?
let crashFile = "leap-fuzz-crash.bin"

/// On a crash (trap, abort, bad access) the input that caused it is written to `crashFile` in the working
/// directory before the signal takes its default course; `leap-fuzz <target> 0 leap-fuzz-crash.bin` replays it.
func installCrashHandler() {
    for sig in [SIGABRT, SIGSEGV, SIGILL, SIGTRAP, SIGBUS, SIGFPE] {
        signal(sig) { s in
            let fd = open(crashFile, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            if fd >= 0 {
                if let b = crashInput, let base = b.baseAddress { _ = write(fd, base, b.count) }
                close(fd)
            }
            let note: StaticString = "leap-fuzz: crashed on an input, saved in leap-fuzz-crash.bin\n"
            _ = write(2, note.utf8Start, note.utf8CodeUnitCount)
            signal(s, SIG_DFL)
            raise(s)
        }
    }
}

/// Runs one input with it registered for the crash handler.
func runRecorded(_ target: FuzzTarget, _ input: [UInt8]) {
    input.withUnsafeBytes { b in
        crashInput = b
        target.run(input)
        crashInput = nil
    }
}

/// Runs `target` on mutated inputs for `seconds`; returns how many inputs ran.
func fuzz(_ target: FuzzTarget, seeds: [[UInt8]], seconds: Double, rng: inout FuzzRNG) -> Int {
    var corpus = seeds.isEmpty ? [[UInt8]()] : seeds
    for s in corpus { runRecorded(target, s) }
    let deadline = now() + seconds
    var runs = corpus.count
    while now() < deadline {
        for _ in 0..<64 {
            let a = corpus[rng.below(corpus.count)]
            let b = corpus[rng.below(corpus.count)]
            let input = mutate(a, other: b, rng: &rng)
            runRecorded(target, input)
            runs += 1
            // Keep a bounded, slowly refreshed corpus so mutations compound.
            if rng.below(16) == 0 {
                if corpus.count < 256 { corpus.append(input) } else { corpus[rng.below(corpus.count)] = input }
            }
        }
    }
    return runs
}
