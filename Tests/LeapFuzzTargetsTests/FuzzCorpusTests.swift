// The committed fuzz inputs run through their targets in the ordinary test build: the seed corpora
// (Tests/Fixtures/fuzz/<target>/) and every input that once crashed a target or broke its invariant
// (Tests/Fixtures/fuzz/regressions/<target>/, kept after the fix). A target traps or aborts on failure,
// which fails the test run.
import LeapFuzzTargets
import LeapTestFiles
import Testing

private let fuzzDir = fixturesDir("fuzz")

/// The targets scripts/fuzz.sh runs under libFuzzer (each has a committed seed corpus).
private let libFuzzerTargets = ["gguf", "wav", "jpeg", "json", "message", "template", "toolcalls", "grammar", "bundle", "snapshot",
                                "http-headers", "bundle-location", "bundle-cache"]

@Test(arguments: libFuzzerTargets)
func seedCorpusRunsClean(target: String) throws {
    let run = try #require(fuzzTargets[target]).run
    let files = try #require(regularFiles(in: fuzzDir + "/" + target), "no corpus for \(target)")
    #expect(!files.isEmpty)
    for file in files { run(try #require(readBytes(file))) }
}

@Test func regressionInputsRunClean() throws {
    let root = fuzzDir + "/regressions"
    var count = 0
    for target in fuzzTargets.keys.sorted() {
        guard let files = regularFiles(in: root + "/" + target) else { continue }
        let run = try #require(fuzzTargets[target]).run
        for file in files {
            run(try #require(readBytes(file)))
            count += 1
        }
    }
    // Every directory under regressions/ names a target (a typo would silently skip its inputs).
    for dir in subdirectories(of: root) { #expect(fuzzTargets[dir] != nil, "regressions/\(dir) names no target") }
    print("fuzz regressions: \(count) inputs")
}
