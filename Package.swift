// swift-tools-version:6.0
// libleap: an on-device LLM SDK for Linux, shipped as a C-ABI shared library (libleap.so, include/leap.h).
//
// Module graph (one-way; nothing below LeapCAPI knows about C):
//
// LeapCore (LeapError, reading a file without trusting it) sits under every module that can fail (all but LeapSampling and the C targets).
//   CLeapKernels ──► CLeapMediaKernels ──► LeapAudio (resampler), LeapAudioEncoder (mel spectrogram), LeapSpeech
//     (ISTFT): the one FFT; LeapKernels (BatchedLinear), LeapVision: the encoders' matrix products, GELU, softmax
//   LeapJSON, LeapAudio ──► LeapMessages ─────────────────────────────┐
//   LeapJSON ──► LeapChatTemplate ─────────────────────────┤
//   LeapJSON ──► LeapBundles, CLeapCurl ──► LeapDownload ──┤   (bundle manifests and their downloads)
//   LeapAudio ─────────────────────────────────────────────┤
//   CLeapKernels ──► LeapGGUF (type facts and dequantization: the kernels' types.c and scalar reference)
//   LeapGGUF ──► LeapTokenizer ────────────────────────────┤
//   LeapGGUF, CLeapKernels ──► LeapKernels ──► LeapModels ─┼─► LeapRuntime ──► LeapCAPI (+ CLeap = include/leap.h)
//   LeapSampling, LeapToolCalls, LeapGrammar ──────────────┤
//   LeapImage ──► LeapVision (LFM2-VL) ────────────────────┤   media encoders and the audio decoder: on
//   LeapKernels ──► LeapAudioEncoder (LFM2-Audio in) ──────┤   LeapKernels; their rows enter LeapModels
//   LeapModels, LeapSampling ──► LeapSpeech (audio out) ───┤   through the one embeddings-in path
//   LeapModels, CLeapStateSupport ──► LeapPromptCache ─────┘   (saved prompt state; XXH64, build-id)
//
// Release builds link the Swift runtime statically: scripts/build.sh passes `-Xswiftc -static-stdlib`
// (putting it in linkerSettings would break `swift test`).
import PackageDescription

let swift5: [SwiftSetting] = [.swiftLanguageMode(.v5)]
// Numeric Swift code is useless at -Onone; keep debug builds usable for tests that run models.
let fast: [SwiftSetting] = swift5 + [.unsafeFlags(["-O"], .when(configuration: .debug))]

let package = Package(
    name: "leap",
    products: [
        .library(name: "leap", type: .dynamic, targets: ["LeapCAPI"]),
        .executable(name: "leap-bench", targets: ["LeapBench"]),
        .executable(name: "leap-fuzz", targets: ["LeapFuzz"]),
        .executable(name: "leap-libfuzzer", targets: ["LeapLibFuzzer"]),
    ],
    targets: [
        // The public C header, exposed to Swift so that `@c @implementation` checks every entry point.
        .target(name: "CLeap", path: "include", publicHeadersPath: "."),

        // Core modules (no Foundation).
        .target(name: "LeapCore", swiftSettings: fast, linkerSettings: [.linkedLibrary("m")]),
        .target(name: "LeapJSON", dependencies: ["LeapCore"], swiftSettings: swift5),
        .target(name: "LeapMessages", dependencies: ["LeapCore", "LeapJSON", "LeapAudio"], swiftSettings: swift5),
        .target(name: "LeapAudio", dependencies: ["LeapCore", "CLeapMediaKernels"], swiftSettings: fast),
        .target(name: "LeapGGUF", dependencies: ["LeapCore", "CLeapKernels"], swiftSettings: fast),
        // LEAP bundle manifests, and the downloads of their files (libcurl, opened at first use).
        .target(name: "LeapBundles", dependencies: ["LeapCore", "LeapJSON"], swiftSettings: swift5),
        .target(name: "CLeapCurl"),
        .target(name: "LeapDownload", dependencies: ["LeapCore", "CLeapCurl"], swiftSettings: swift5),
        // The CPU kernels: a folder per ISA family, each ISA's dispatch table declared in its folder
        // (lk_tables.h); headers at the target's root.
        .target(
            name: "CLeapKernels",
            cSettings: [.headerSearchPath("."), .unsafeFlags(["-O3", "-fno-math-errno"])]),
        // The media kernels: the FFT (resampler, mel spectrogram, ISTFT) and the resampler's FIR kernels, with their
        // own CPU dispatch, and the encoders' matrix products, GELU and softmax on CLeapKernels' dispatch and
        // scratch (its public headers only: leap_kernels.h, leap_kernel_support.h).
        .target(
            name: "CLeapMediaKernels",
            dependencies: ["CLeapKernels"],
            cSettings: [.unsafeFlags(["-O3", "-fno-math-errno"])]),
        .target(name: "LeapKernels", dependencies: ["LeapCore", "LeapGGUF", "CLeapKernels", "CLeapMediaKernels"], swiftSettings: fast),
        .target(name: "LeapTokenizer", dependencies: ["LeapCore", "LeapGGUF"], swiftSettings: fast),
        .target(name: "LeapChatTemplate", dependencies: ["LeapCore", "LeapJSON"], swiftSettings: swift5),
        .target(name: "LeapSampling", swiftSettings: fast),
        .target(name: "LeapToolCalls", dependencies: ["LeapCore", "LeapJSON", "LeapMessages"], swiftSettings: swift5),
        .target(name: "LeapGrammar", dependencies: ["LeapCore", "LeapJSON"], swiftSettings: fast),
        .target(name: "LeapModels", dependencies: ["LeapCore", "LeapGGUF", "LeapKernels", "CLeapKernels"], swiftSettings: fast),
        // Media: image decoding, the encoders that turn images and audio into embedding rows for the text
        // model, and the audio output decoder.
        .target(name: "LeapImage", dependencies: ["LeapCore"], swiftSettings: fast),
        .target(name: "LeapVision", dependencies: ["LeapCore", "LeapGGUF", "LeapKernels", "LeapImage", "CLeapKernels", "CLeapMediaKernels"], swiftSettings: fast),
        .target(name: "LeapAudioEncoder", dependencies: ["LeapCore", "LeapGGUF", "CLeapKernels", "CLeapMediaKernels", "LeapKernels"], swiftSettings: fast),
        // Saved prompt prefixes (context state snapshots) in memory and on disk.
        .target(name: "LeapPromptCache", dependencies: ["LeapCore", "LeapGGUF", "LeapModels", "CLeapKernels", "CLeapStateSupport"],
                swiftSettings: fast),
        // XXH64 checksums and the library's build-id for the prompt cache's snapshot files.
        .target(name: "CLeapStateSupport", cSettings: [.unsafeFlags(["-O3"])]),
        .target(name: "LeapSpeech", dependencies: ["LeapCore", "LeapGGUF", "LeapKernels", "LeapModels", "LeapSampling", "CLeapKernels", "CLeapMediaKernels"], swiftSettings: fast),
        .target(
            name: "LeapRuntime",
            dependencies: [
                "LeapCore", "LeapJSON", "LeapMessages", "LeapAudio", "LeapGGUF", "LeapTokenizer", "LeapChatTemplate",
                "LeapKernels", "LeapModels", "LeapSampling", "LeapToolCalls", "LeapGrammar",
                "LeapImage", "LeapVision", "LeapAudioEncoder", "LeapSpeech", "LeapBundles", "LeapDownload", "LeapPromptCache",
            ],
            swiftSettings: fast),

        // The thin C-ABI layer: only `@c @implementation public` entry points and their glue.
        .target(
            name: "LeapCAPI",
            dependencies: ["CLeap", "LeapCore", "LeapJSON", "LeapMessages", "LeapAudio", "LeapGGUF", "LeapImage", "LeapRuntime",
                           "LeapChatTemplate", "LeapModels", "LeapSampling", "LeapTokenizer", "LeapToolCalls",
                           "LeapDownload", "LeapPromptCache"],
            swiftSettings: swift5,
            linkerSettings: [
                .unsafeFlags([
                    "-Xlinker", "--version-script=\(Context.packageDirectory)/scripts/leap.map",
                    "-Xlinker", "-soname=libleap.so.0",
                ])
            ]),

        // Programs.
        .executableTarget(
            name: "LeapBench",
            dependencies: ["CLeapKernels", "CLeapMediaKernels", "LeapJSON", "LeapAudio", "LeapAudioEncoder", "LeapGGUF", "LeapKernels",
                           "LeapTokenizer", "LeapChatTemplate", "LeapToolCalls", "LeapGrammar", "LeapModels", "LeapVision",
                           "LeapSpeech", "LeapCore", "LeapMessages", "LeapRuntime", "LeapPromptCache"],
            swiftSettings: fast),
        // The fuzz targets (one per parser) and their two drivers: leap-fuzz, a random mutator in the release
        // build, and leap-libfuzzer, coverage-guided under libFuzzer + ASan (scripts/fuzz.sh) or a replay tool.
        .target(
            name: "LeapFuzzTargets",
            dependencies: ["LeapCore", "LeapJSON", "LeapMessages", "LeapAudio", "LeapImage", "LeapGGUF", "LeapTokenizer",
                           "LeapChatTemplate", "LeapToolCalls", "LeapGrammar", "LeapModels", "LeapBundles", "LeapDownload", "LeapPromptCache"],
            swiftSettings: swift5),
        .executableTarget(name: "LeapFuzz", dependencies: ["LeapFuzzTargets", "LeapCore"], swiftSettings: swift5),
        .executableTarget(name: "LeapLibFuzzer", dependencies: ["LeapFuzzTargets", "LeapCore"],
                          swiftSettings: swift5 + [.unsafeFlags(["-parse-as-library"])]),

        // Tests: one target per module. Tests use only `package`/`public` API (no @testable), so they
        // also run in release builds (`swift test -c release`).
        .testTarget(name: "LeapJSONTests", dependencies: ["LeapTestFiles", "LeapJSON", "LeapCore"], swiftSettings: swift5),
        .testTarget(name: "LeapMessagesTests", dependencies: ["LeapMessages", "LeapAudio", "LeapCore", "LeapJSON"], swiftSettings: swift5),
        .testTarget(name: "LeapAudioTests", dependencies: ["LeapTestFiles", "LeapAudio", "LeapCore"], swiftSettings: swift5),
        .testTarget(name: "LeapBundlesTests", dependencies: ["LeapBundles", "LeapCore"], swiftSettings: swift5),
        // Downloads and bundle loading against a loopback HTTP server the tests start (scripts/bundle_test_server.py).
        .testTarget(name: "LeapDownloadTests", dependencies: ["LeapTestFiles", "LeapDownload", "LeapBundles", "LeapRuntime", "LeapMessages",
                                                            "LeapJSON", "LeapCore"],
                    swiftSettings: swift5),
        .testTarget(name: "LeapGGUFTests", dependencies: ["LeapTestFiles", "LeapGGUF", "LeapCore"], swiftSettings: fast),
        .testTarget(name: "LeapKernelsTests", dependencies: ["LeapTestFiles", "LeapKernels", "LeapGGUF", "CLeapKernels"], swiftSettings: fast),
        .testTarget(name: "LeapTokenizerTests", dependencies: ["LeapTestFiles", "LeapTokenizer", "LeapCore"], swiftSettings: swift5),
        .testTarget(name: "LeapChatTemplateTests", dependencies: ["LeapTestFiles", "LeapChatTemplate", "LeapJSON", "LeapCore"], swiftSettings: swift5),
        .testTarget(name: "LeapFuzzTargetsTests", dependencies: ["LeapTestFiles", "LeapFuzzTargets"], swiftSettings: swift5),
        .testTarget(name: "LeapSamplingTests", dependencies: ["LeapSampling"], swiftSettings: swift5),
        .testTarget(name: "LeapToolCallsTests", dependencies: ["LeapTestFiles", "LeapToolCalls", "LeapJSON", "LeapMessages", "LeapChatTemplate", "LeapCore"], swiftSettings: swift5),
        .testTarget(name: "LeapGrammarTests", dependencies: ["LeapTestFiles", "LeapGrammar", "LeapJSON", "LeapCore"], swiftSettings: swift5),
        .testTarget(name: "LeapImageTests", dependencies: ["LeapTestFiles", "LeapImage", "LeapCore"], swiftSettings: swift5),
        .testTarget(name: "LeapVisionTests", dependencies: ["LeapTestFiles", "LeapVision", "LeapImage", "LeapGGUF", "LeapKernels", "LeapCore",
                                                       "CLeapKernels", "CLeapMediaKernels"], swiftSettings: fast),
        .testTarget(name: "LeapAudioEncoderTests", dependencies: ["LeapTestFiles", "LeapAudioEncoder", "LeapAudio", "LeapGGUF", "LeapKernels", "LeapCore"],
                    swiftSettings: fast),
        .testTarget(name: "LeapModelsTests", dependencies: ["LeapTestFiles", "LeapModels", "LeapGGUF", "LeapKernels", "LeapTokenizer", "LeapCore"], swiftSettings: fast),
        .testTarget(name: "LeapPromptCacheTests", dependencies: ["LeapTestFiles", "LeapPromptCache", "LeapModels", "LeapGGUF", "LeapCore", "CLeapKernels"],
                    swiftSettings: fast),
        .testTarget(name: "LeapSpeechTests", dependencies: ["LeapTestFiles", "LeapSpeech", "LeapModels", "LeapGGUF", "LeapKernels", "LeapJSON"], swiftSettings: fast),
        // Fixture paths and file reading for the test targets.
        .target(name: "LeapTestFiles", dependencies: ["LeapCore"], path: "Tests/LeapTestFiles", swiftSettings: swift5),
        // Scripted runtime backends (no weights) shared by the runtime and C-API tests.
        .target(name: "LeapRuntimeTestSupport", dependencies: ["LeapRuntime", "LeapAudio", "LeapJSON", "LeapMessages", "LeapCore"],
                path: "Tests/LeapRuntimeTestSupport", swiftSettings: swift5),
        .testTarget(name: "LeapRuntimeTests", dependencies: ["LeapTestFiles", "LeapRuntime", "LeapRuntimeTestSupport", "LeapMessages", "LeapJSON", "LeapCore", "LeapAudio",
                                                      "LeapPromptCache", "CLeapKernels"],
                    swiftSettings: swift5),
        .testTarget(name: "LeapCAPITests", dependencies: ["LeapCAPI", "CLeap", "LeapRuntimeTestSupport", "LeapTestFiles", "LeapAudio", "LeapRuntime", "LeapModels"], swiftSettings: swift5),
    ]
)
