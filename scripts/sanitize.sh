#!/usr/bin/env bash
# Memory and thread checks of the C ABI (slow; not part of scripts/test.sh):
#   asan     - debug build with AddressSanitizer + LeakSanitizer; every C test, then the Python tests with
#              the ASan runtime preloaded (CPython's own exit-time leaks suppressed, libleap's reported)
#   valgrind - the C tests that need no model, against the release build (scripts/build.sh first)
#   tsan     - debug build with ThreadSanitizer; the threaded C tests: test_threads, test_reentrancy,
#              test_log (a callback replaced while another thread is in it), test_bundle (a cancel token
#              set from another thread during a download), test_prompt_cache (the background snapshot
#              writer, two threads' conversations sharing one cache)
# Usage: scripts/sanitize.sh [asan|valgrind|tsan]...   (default: asan valgrind)
# Needs clang (the Swift toolchain's) and valgrind; real models via LEAP_MODELS_DIR or <repo>/models.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export LEAP_MODELS_DIR="${LEAP_MODELS_DIR:-$repo/models}"
out="$repo/build/sanitize"
mkdir -p "$out"
failed=0
no_model_tests="test_foundation test_robustness test_audio test_gguf test_toolcalls test_ffi test_log"

# build_c_tests <dir> <libdir> <cflags...>
build_c_tests() {
    local dir=$1 lib=$2; shift 2
    mkdir -p "$dir"
    for src in Tests/c/test_*.c; do
        local name extra=""
        name=$(basename "$src" .c)
        [ "$name" = test_ffi ] && extra="-lffi"
        # Flags last: they may hold libraries, which must follow the objects.
        clang -std=c99 -Wall -Wextra -Werror -pedantic -g -Iinclude "$src" -o "$dir/$name" -L"$lib" -lleap $extra \
            -lpthread -lm -Wl,-rpath,"$lib" "$@" 2>&1 | grep -v "Cannot export local symbol" || true
    done
}

# run_test <label> <command...>: the command's output goes to a log; pass = exit 0 and some test passed
run_test() {
    local label=$1; shift
    if "$@" > "$out/$label.log" 2>&1 && grep -qE '[1-9][0-9]* passed' "$out/$label.log"; then
        echo "ok: $label ($(grep -oE '[0-9]+ passed(, [0-9]+ (failed|skipped))*' "$out/$label.log" | tail -1))"
    else
        echo "FAILED: $label (log: $out/$label.log)"
        grep -E "ERROR: (Address|Leak|Thread)Sanitizer|WARNING: ThreadSanitizer|definitely lost|Invalid (read|write)" "$out/$label.log" | head -5
        failed=$((failed + 1))
    fi
}

asan() {
    # Own scratch paths: a sanitized build must not replace the objects of the ordinary debug build.
    swift build --scratch-path .build/asan --sanitize=address --product leap || return 1
    local lib="$repo/.build/asan/debug"
    ln -sf libleap.so "$lib/libleap.so.0"  # the SONAME the test binaries look for
    build_c_tests "$out/asan" "$lib" -fsanitize=address -fno-omit-frame-pointer
    for t in "$out"/asan/test_*; do
        run_test "asan-$(basename "$t")" env ASAN_OPTIONS=detect_leaks=1 "$t"
    done
    # The real interpreter, not a wrapper: pyenv's `python3` is a bash script, which under the preloaded ASan
    # runtime reports bash's own leaks and runs a python without this environment's pytest.
    local python
    python=$(python3 -c 'import sys; print(sys.executable)') || return 1
    "$python" -c 'import pytest, numpy' || { echo "asan: $python lacks pytest or numpy"; return 1; }
    # CPython frees little at exit: suppress allocations made by the interpreter itself and by numpy's
    # extension module (its ufunc tables live until exit).
    printf 'leak:%s\n' _PyObject_Malloc _PyObject_Realloc PyMem_RawMalloc PyMem_RawRealloc PyMem_RawCalloc \
        _PyMem_RawMalloc _PyMem_RawRealloc _PyMem_RawCalloc libpython3 _ctypes libffi _multiarray_umath \
        > "$out/lsan-python.supp"
    run_test asan-pytest env LD_PRELOAD="$(clang -print-file-name=libclang_rt.asan-x86_64.so)" \
        ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS="suppressions=$out/lsan-python.supp" \
        LEAP_LIBRARY_PATH="$lib/libleap.so" PYTHONDONTWRITEBYTECODE=1 \
        "$python" -m pytest -q -p no:cacheprovider bindings/python/tests
}

valgrind_tests() {
    [ -f build/lib/libleap.so ] || { echo "valgrind: run scripts/build.sh first"; return 1; }
    # Valgrind 3.19 cannot read clang's DWARF 5: check a debug-stripped copy, tests built with DWARF 4.
    local lib="$out/valgrind-lib"
    mkdir -p "$lib"
    objcopy --strip-debug build/lib/libleap.so "$lib/libleap.so"
    ln -sf libleap.so "$lib/libleap.so.0"
    build_c_tests "$out/valgrind" "$lib" -gdwarf-4
    for t in $no_model_tests; do
        run_test "valgrind-$t" env LEAP_MODELS_DIR=/nonexistent valgrind --leak-check=full \
            --errors-for-leak-kinds=definite --error-exitcode=1 "$out/valgrind/$t"
    done
}

tsan() {
    swift build --scratch-path .build/tsan --sanitize=thread --product leap || return 1
    local lib="$repo/.build/tsan/debug"
    ln -sf libleap.so "$lib/libleap.so.0"
    # The toolchain's TSan runtime has libdispatch interceptors: link dispatch and BlocksRuntime too.
    local swift_lib
    swift_lib="$(dirname "$(dirname "$(command -v swift)")")/lib/swift/linux"
    build_c_tests "$out/tsan" "$lib" -fsanitize=thread -L"$swift_lib" -ldispatch -lBlocksRuntime -Wl,-rpath,"$swift_lib"
    for t in test_threads test_reentrancy test_log test_bundle test_prompt_cache; do
        run_test "tsan-$t" env TSAN_OPTIONS=halt_on_error=1 "$out/tsan/$t"
    done
}

modes=("$@")
[ ${#modes[@]} -eq 0 ] && modes=(asan valgrind)
for mode in "${modes[@]}"; do
    case "$mode" in
    asan) asan || failed=$((failed + 1)) ;;
    valgrind) valgrind_tests || failed=$((failed + 1)) ;;
    tsan) tsan || failed=$((failed + 1)) ;;
    *) echo "unknown mode $mode (asan, valgrind, tsan)"; exit 2 ;;
    esac
done
[ "$failed" -eq 0 ] && echo "sanitize: all clean" || echo "sanitize: $failed failure(s)"
[ "$failed" -eq 0 ]
