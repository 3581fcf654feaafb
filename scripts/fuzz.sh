#!/usr/bin/env bash
# Coverage-guided fuzzing of every parser with libFuzzer + AddressSanitizer, a bounded time per target.
#   scripts/fuzz.sh [seconds per target (default 60)] [target...]   (default: every libFuzzer target)
# Builds leap-libfuzzer instrumented (swift build --sanitize=fuzzer --sanitize=address, its own scratch path
# .build/libfuzzer), then runs each target from its committed seed corpus Tests/Fixtures/fuzz/<target>/ plus
# the inputs found by earlier runs (build/fuzz/corpus/<target>/, where new inputs go: the committed corpus is
# never written). A crash or broken invariant leaves its input in build/fuzz/crashes/ and fails the script;
# fix the bug, then keep the input as a regression test in Tests/Fixtures/fuzz/regressions/<target>/
# (LeapFuzzTargetsTests runs those). Reproduce: LEAP_FUZZ_TARGET=<target> SWIFT_BACKTRACE=enable=no
# .build/libfuzzer/debug/leap-libfuzzer <input file>.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(gguf wav jpeg json message template toolcalls grammar bundle snapshot http-headers bundle-location bundle-cache)

# `--sanitize=fuzzer` links libFuzzer but does not instrument Swift modules for coverage: the
# -sanitize-coverage flags do (edges, comparisons, the counters and PC table libFuzzer reads).
swift build --scratch-path .build/libfuzzer --sanitize=fuzzer --sanitize=address -Xswiftc -DLIBFUZZER \
    -Xswiftc -sanitize-coverage=edge,trace-cmp,inline-8bit-counters,pc-table \
    --product leap-libfuzzer 2>&1 | grep -v "Cannot export local symbol" | tail -3
fuzzer=.build/libfuzzer/debug/leap-libfuzzer
[ -x "$fuzzer" ] || { echo "fuzz: building leap-libfuzzer failed"; exit 1; }

out="$repo/build/fuzz"
mkdir -p "$out/crashes" "$out/logs"
failed=0
for t in "${targets[@]}"; do
    seeds="Tests/Fixtures/fuzz/$t"
    [ -d "$seeds" ] || { echo "fuzz $t: no seed corpus $seeds"; failed=$((failed + 1)); continue; }
    mkdir -p "$out/corpus/$t"
    log="$out/logs/$t.log"
    # Swift's backtracer and ASan both want the crash: without SWIFT_BACKTRACE=enable=no the process hangs.
    # -max_len matches the corpus maker's cut; -timeout catches hangs (an input running over 10 s).
    SWIFT_BACKTRACE=enable=no LEAP_FUZZ_TARGET="$t" "$fuzzer" "$out/corpus/$t" "$seeds" \
        -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$out/crashes/$t-" -print_final_stats=1 > "$log" 2>&1
    status=$?
    runs=$(grep -oE '^stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$')
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1)
    new=$(grep -oE '^stat::new_units_added: *[0-9]+' "$log" | grep -oE '[0-9]+$')
    if [ $status -eq 0 ]; then
        echo "fuzz $t: ${runs:-?} inputs in ${seconds} s, ${cov:-cov: ?} edges, ${new:-0} new inputs, no crash"
    else
        echo "FAILED: fuzz $t (exit $status; log $log)"
        grep -E "ERROR:|Fatal error|fuzz: |Test unit written" "$log" | head -5
        failed=$((failed + 1))
    fi
done
[ "$failed" -eq 0 ]
