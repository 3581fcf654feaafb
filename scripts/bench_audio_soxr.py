#!/usr/bin/env python3
"""libsoxr (the `soxr` PyPI package, HQ quality) resampling throughput on the same signals as
`leap-bench audio`: 60 s of audio per rate pair, best of 5 by thread CPU time (stable on a busy machine), one thread.
"first ms" is the first of the 5 (libsoxr designs its filters on every call; the first call also pays for
first-touch page faults, like libleap's "first ms")."""
import sys
import time

try:
    import numpy as np
    import soxr
except ImportError as e:  # pragma: no cover
    print(f"soxr benchmark skipped: {e}")
    sys.exit(0)

PAIRS = [(8000, 16000), (11025, 16000), (22050, 16000), (24000, 16000), (32000, 16000), (44100, 16000),
         (48000, 16000), (96000, 16000), (44056, 16000), (16000, 24000), (24000, 48000)]
SECONDS = 60


def signal(rate: int) -> "np.ndarray":
    t = np.arange(rate * SECONDS) / rate
    rng = np.random.default_rng(1)
    x = 0.3 * np.sin(2 * np.pi * 440 * t) + 0.2 * np.sin(2 * np.pi * 3100 * t) + 0.01 * rng.uniform(-1, 1, t.size)
    return x.astype(np.float32)


def main() -> None:
    quality = sys.argv[1] if len(sys.argv) > 1 else "HQ"
    print(f"from -> to        time ms    Msamples/s in   x real time   first ms   (soxr {soxr.__version__}, {quality})")
    for fin, fout in PAIRS:
        x = signal(fin)
        times = []
        for _ in range(5):
            t0 = time.thread_time()
            soxr.resample(x, fin, fout, quality=quality)
            times.append(time.thread_time() - t0)
        best = min(times)
        print(f"{f'{fin} -> {fout}':>16}  {best * 1e3:8.2f}   {x.size / best / 1e6:10.2f}   {SECONDS / best:11.0f}"
              f"   {times[0] * 1e3:8.2f}")


if __name__ == "__main__":
    main()
