// LeapFuzzTargets: one function per parser that untrusted bytes reach, shared by the two fuzz drivers:
// leap-libfuzzer (coverage-guided, libFuzzer + AddressSanitizer; scripts/fuzz.sh) and leap-fuzz (the
// bounded random mutator of the release build). A target must return (or swallow a LeapError) on any input;
// a crash, trap or hang is the bug being hunted, and a broken invariant (a round trip that does not come
// back, a shape that does not add up) calls `fuzzFailure`, which aborts so that either driver keeps the input.
import Glibc

/// Built-in seed inputs (the committed corpora under Tests/Fixtures/fuzz add the fixtures' files) and the
/// function that runs one input.
package typealias FuzzTarget = (seeds: [[UInt8]], run: ([UInt8]) -> Void)

/// Every target by name. The libFuzzer corpus of target `name` is Tests/Fixtures/fuzz/<name>/, its
/// regression inputs (crashes found and fixed) Tests/Fixtures/fuzz/regressions/<name>/.
package let fuzzTargets: [String: FuzzTarget] = [
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
    "bundle": fuzzBundle,
    "snapshot": fuzzSnapshot,
    "http-headers": fuzzHTTPHeaders,
    "bundle-location": fuzzBundleLocation,
    "bundle-cache": fuzzBundleCache,
]

/// A broken invariant: the message goes to stderr (unbuffered, so it survives the abort), then abort(), on
/// which the driver saves the input.
package func fuzzFailure(_ message: String) -> Never {
    fputs("fuzz: \(message)\n", stderr)
    abort()
}

/// The paths of the regular files directly inside directory `path`, sorted; nil when it is not a readable
/// directory.
package func regularFiles(in path: String) -> [String]? {
    entries(of: path, type: DT_REG)?.map { path + "/" + $0 }
}

/// The names of the directories directly inside `path`, sorted (empty when it is not a readable directory).
package func subdirectories(of path: String) -> [String] {
    entries(of: path, type: DT_DIR)?.filter { $0 != "." && $0 != ".." } ?? []
}

private func entries(of path: String, type: Int) -> [String]? {
    guard let dir = opendir(path) else { return nil }
    defer { closedir(dir) }
    var out: [String] = []
    while let entry = readdir(dir) {
        if entry.pointee.d_type == UInt8(type) {
            out.append(withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) })
        }
    }
    return out.sorted()
}
