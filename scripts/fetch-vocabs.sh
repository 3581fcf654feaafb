#!/usr/bin/env bash
# Fetches llama.cpp's vocabulary-only test files (models/ggml-vocab-*.gguf with their .inp/.out goldens)
# from the llama-cpp-python source distribution on PyPI into $LEAP_VOCABS_DIR (default:
# <repo>/models/vocabs). The tokenizer tests use them when present and say so when they are not.
# Idempotent: an existing non-empty directory is kept. The files are checked against the SHA-256 values
# pinned in scripts/vocabs.sha256 (those of llama-cpp-python 0.3.36); a mismatch stops the script.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${LEAP_VOCABS_DIR:-$repo/models/vocabs}
version=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
verify() {
    [ "$version" = 0.3.36 ] || { echo "llama-cpp-python $version: no pinned SHA-256 values, not checked" >&2; return 0; }
    (cd "$dir" && sha256sum --quiet --strict -c "$repo/scripts/vocabs.sha256") >&2 || {
        echo "error: vocabulary files in $dir differ from scripts/vocabs.sha256; delete the directory and fetch again" >&2
        exit 1
    }
}
if ls "$dir"/ggml-vocab-*.gguf >/dev/null 2>&1; then
    verify
    echo "vocabularies already in $dir" >&2
    exit 0
fi
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetching llama-cpp-python==$version sdist from PyPI for its vocabulary test files ..." >&2
# pip prepares the sdist's metadata after downloading it (which needs its build backend); only the
# tarball matters here, so a failure after the download is tolerated.
python3 -m pip download -q --no-deps --no-binary llama-cpp-python -d "$tmp" "llama-cpp-python==$version" || true
ls "$tmp"/llama_cpp_python-*.tar.gz >/dev/null 2>&1 || { echo "download of llama-cpp-python==$version failed" >&2; exit 1; }
python3 - "$tmp"/llama_cpp_python-*.tar.gz "$dir" <<'PY'
import os, sys, tarfile
src, dst = sys.argv[1], sys.argv[2]
with tarfile.open(src) as t:
    for m in t.getmembers():
        name = os.path.basename(m.name)
        if m.isfile() and "/vendor/llama.cpp/models/" in m.name and name.startswith("ggml-vocab-"):
            with t.extractfile(m) as f, open(os.path.join(dst, name), "wb") as out:
                out.write(f.read())
PY
ls "$dir" >&2
verify
