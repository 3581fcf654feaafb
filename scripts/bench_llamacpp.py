#!/usr/bin/env python3
"""llama.cpp's figures (via llama-cpp-python) for the same measurement as `leap-bench model`:

  load time, prompt processing of N_PROMPT tokens (one eval, batch = N_PROMPT), time to first token,
  generation of N_GEN tokens (one token per eval, greedy) after a 16-token prompt, peak RSS.

Token ids are the same deterministic pseudo-random sequence as the Swift benchmark (LCG below), so both
engines process identical inputs. Prints `key: value` lines that leap-bench parses.

Usage: python3 scripts/bench_llamacpp.py MODEL.gguf [--threads N] [--prompt 512] [--gen 128] [--reps 3]
"""
import argparse
import resource
import statistics
import time

import numpy as np


def token_ids(n, n_vocab, seed=12345):
    """Same generator as BenchModel.swift: 64-bit LCG, ids in [16, n_vocab)."""
    out, s = [], seed
    for _ in range(n):
        s = (s * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        out.append(16 + (s >> 33) % (n_vocab - 16))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    from llama_cpp import Llama

    t0 = time.perf_counter()
    llm = Llama(model_path=a.model, n_ctx=a.prompt + a.gen + 32, n_batch=a.prompt, n_ubatch=a.prompt,
                n_threads=a.threads, n_threads_batch=a.threads, verbose=False, flash_attn=False)
    load = time.perf_counter() - t0
    n_vocab = llm.n_vocab()
    prompt = token_ids(a.prompt, n_vocab)
    pp, ttft, tg = [], [], []
    for _ in range(a.reps):
        llm.reset()
        llm._ctx.kv_cache_clear() if hasattr(llm._ctx, "kv_cache_clear") else None
        t0 = time.perf_counter()
        llm.eval(prompt)
        first = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        dt = time.perf_counter() - t0
        pp.append(a.prompt / dt)
        ttft.append(dt)
        llm.reset()
        llm.eval(prompt[:16])
        tok = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        t0 = time.perf_counter()
        for _ in range(a.gen):
            llm.eval([tok])
            tok = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        tg.append(a.gen / (time.perf_counter() - t0))
    print(f"engine: llama.cpp (llama-cpp-python)")
    print(f"load_s: {load:.4f}")
    print(f"pp_tok_s: {statistics.median(pp):.2f}")
    print(f"ttft_s: {statistics.median(ttft):.4f}")
    print(f"tg_tok_s: {statistics.median(tg):.2f}")
    print(f"peak_rss_mb: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f}")


if __name__ == "__main__":
    main()
