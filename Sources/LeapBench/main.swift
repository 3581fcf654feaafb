// leap-bench: prints throughput figures (never asserts timings). Usage: leap-bench <suite> [options]
let suites: [String: ([String]) -> Void] = [
    "audio": benchAudio,
]
let args = Array(CommandLine.arguments.dropFirst())
if let name = args.first, let suite = suites[name] { suite(Array(args.dropFirst())) } else { print("usage: leap-bench <suite>") }
