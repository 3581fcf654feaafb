#!/usr/bin/env python3
"""Load a LEAP model bundle (a manifest path or URL), downloading its files with a progress bar, then answer
one prompt with the manifest's generation defaults:

    python3 examples/load_bundle.py MANIFEST [--cache DIR] [--prompt TEXT] [--max-tokens N]
    python3 examples/load_bundle.py https://huggingface.co/LiquidAI/LeapBundles/resolve/main/<Model>-GGUF/<Quant>.json

Ctrl-C during a download cancels it; the partial file stays as <file>.part in the cache and the next run
resumes it."""
import argparse
import os
import sys
from typing import Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bindings", "python"))
import leap  # noqa: E402


def progress_bar(file: str, done: int, total: Optional[int]) -> None:
    """  model.gguf  [##########..........]  50%  12.3 / 24.6 MB, redrawn in place on stderr."""
    if total:
        filled = 30 * done // total
        line = f"  {file}  [{'#' * filled}{'.' * (30 - filled)}] {100 * done // total:3d}%  {done / 1e6:.1f} / {total / 1e6:.1f} MB"
    else:
        line = f"  {file}  {done / 1e6:.1f} MB"
    print("\r" + line, end="\n" if total and done == total else "", file=sys.stderr, flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("manifest")
    ap.add_argument("--cache", help="cache folder (default: $LEAP_CACHE_DIR or ~/.cache/leap)")
    ap.add_argument("--prompt", default="What is the capital of France?")
    ap.add_argument("--max-tokens", type=int)
    args = ap.parse_args()
    try:
        model = leap.load_bundle(args.manifest, cache_dir=args.cache, progress=progress_bar)
    except KeyboardInterrupt:  # raised inside the progress callback: the download was cancelled
        print("\ncancelled; the next run resumes the download", file=sys.stderr)
        return 130
    except leap.LeapError as e:
        print(f"\nload_bundle: {e}", file=sys.stderr)
        return 1
    with model:
        conv = model.create_conversation()
        # Options left unset take the manifest's sampling parameters.
        for event in conv.generate_response(args.prompt, leap.GenerationOptions(max_tokens=args.max_tokens)):
            if isinstance(event, leap.Chunk):
                print(event.text, end="", flush=True)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
