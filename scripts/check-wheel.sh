#!/usr/bin/env bash
# The Python wheel stands alone: `pip wheel ./bindings/python` (which runs scripts/build.sh --library), then
# the wheel installed into a fresh venv outside the repository imports, loads the library it carries (not
# the repository's) and evaluates a tiny model copied out of the repository; with the server extra, the
# leap-server console script runs.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
python=$(python3 -c 'import sys; print(sys.executable)')
tmp=$(mktemp -d /tmp/leap-wheel.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$python" -m pip wheel -q --no-deps -w "$tmp/dist" "$repo/bindings/python"
wheel=$(ls "$tmp"/dist/libleap-*.whl)
case "$wheel" in
*-py3-none-linux_*.whl) ;;
*) echo "error: $wheel is not a platform wheel (py3-none-linux_<arch>)"; exit 1 ;;
esac
"$python" -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install -q --no-index "$wheel"
mkdir "$tmp/work"
cp "$repo/Tests/Fixtures/models/lfm2-tiny-f32.gguf" "$tmp/work/"
cd "$tmp/work"
env -u LEAP_LIBRARY_PATH -u PYTHONPATH "$tmp/venv/bin/python" - <<'PY'
import leap

assert leap.library_path.startswith(leap.__path__[0]), f"loaded {leap.library_path}, not the wheel's copy"
with leap.load_model("lfm2-tiny-f32.gguf") as model:
    ctx = model.create_context(context_size=16)
    ctx.eval([1, 2, 3])
    logits = ctx.logits()
    assert len(logits) == 512 and all(x == x for x in logits)
print(f"wheel ok: {leap.library_path}")
PY
# The server extra: its dependencies come from this Python's site-packages (no index needed), and the
# console script of the installed wheel runs.
"$python" -m venv --system-site-packages "$tmp/venv-server"
if "$tmp/venv-server/bin/python" -c 'import fastapi, uvicorn, PIL, httpx, python_multipart, websockets, numpy' 2> /dev/null; then
    "$tmp/venv-server/bin/python" -m pip install -q --no-index "$wheel[server]"
    env -u LEAP_LIBRARY_PATH -u PYTHONPATH "$tmp/venv-server/bin/leap-server" --help > /dev/null
    env -u LEAP_LIBRARY_PATH -u PYTHONPATH "$tmp/venv-server/bin/python" -c 'import leap.server.app'
    # The chat page is package data, not a module: the wheel must carry it.
    env -u LEAP_LIBRARY_PATH -u PYTHONPATH "$tmp/venv-server/bin/python" -c \
        'from importlib import resources; assert "</html>" in resources.files("leap.server").joinpath("static", "index.html").read_text()'
    echo "leap-server ok: $tmp/venv-server/bin/leap-server"
else
    echo "note: fastapi, uvicorn, pillow, httpx, python-multipart, websockets or numpy missing (scripts/setup.sh installs them); leap-server not checked"
fi
echo "$(basename "$wheel")"
