// leap-bench: prints throughput figures (never asserts timings). Usage: leap-bench <suite> [options]
print("usage: leap-bench <suite>")
