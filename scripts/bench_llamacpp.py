#!/usr/bin/env python3
"""llama.cpp's figures (via llama-cpp-python) for the same measurement as `leap-bench model`:

  load time, prompt processing of N_PROMPT tokens (one eval, batch = N_PROMPT), time to first token,
  generation of N_GEN tokens (one token per eval, greedy) after a 16-token prompt, peak RSS.

Token ids are the same deterministic pseudo-random sequence as the Swift benchmark (LCG below), so both
engines process identical inputs. Prints `key: value` lines that leap-bench parses.

With --parallel N (`leap-bench parallel`): N sequences in one context (n_seq_max = N, unified KV cache),
each prefilled with its own prompt (not timed), then GEN steps that decode one token of every sequence in
one llama_decode batch, as llama.cpp's server does with parallel slots; the same with one sequence first.
With --decode-after-prompt (`leap-bench long-context`): the prompt in passes of --ubatch tokens (512,
llama.cpp's default), then GEN tokens decoded at the prompt's depth. Flash attention is off (the path
LEAP's numerics follow) unless --flash-attn.

Usage: python3 scripts/bench_llamacpp.py MODEL.gguf [--threads N] [--prompt 512] [--gen 128] [--reps 3]
       [--parallel N] [--ubatch U] [--decode-after-prompt] [--flash-attn]
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


def last_greedy(llm, n_vocab):
    """Argmax of the last evaluated token's logits, read from the context: llm.scores is filled only with
    logits_all=True (without it, it keeps whatever rows it held, so its argmax is not the model's)."""
    import llama_cpp as L

    return int(np.argmax(np.ctypeslib.as_array(L.llama_get_logits_ith(llm.ctx, -1), shape=(n_vocab,))))


class RawContext:
    """A llama.cpp context through the C API (llama_decode batches; logits read with llama_get_logits_ith)."""

    def __init__(self, a, n_ctx, n_batch, n_seq):
        import llama_cpp as L

        self.L = L
        L.llama_backend_init()
        self.model = L.llama_model_load_from_file(a.model.encode(), L.llama_model_default_params())
        cp = L.llama_context_default_params()
        cp.n_ctx = n_ctx
        cp.n_batch = n_batch
        cp.n_ubatch = n_batch
        cp.n_seq_max = n_seq
        cp.kv_unified = True
        cp.n_threads = a.threads
        cp.n_threads_batch = a.threads
        cp.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_ENABLED if a.flash_attn else L.LLAMA_FLASH_ATTN_TYPE_DISABLED
        self.ctx = L.llama_init_from_model(self.model, cp)
        self.n_vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(self.model))
        self.batch = L.llama_batch_init(n_batch, 0, 1)

    def decode(self, entries):
        """entries: (token, pos, seq, wants_logits) for one llama_decode call."""
        b = self.batch
        b.n_tokens = len(entries)
        for i, (tok, pos, seq, lg) in enumerate(entries):
            b.token[i] = tok
            b.pos[i] = pos
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = seq
            b.logits[i] = 1 if lg else 0
        if self.L.llama_decode(self.ctx, b) != 0:
            raise RuntimeError("llama_decode failed")

    def greedy(self, i):
        """Argmax of the logits of batch entry i of the last decode."""
        row = np.ctypeslib.as_array(self.L.llama_get_logits_ith(self.ctx, i), shape=(self.n_vocab,))
        return int(np.argmax(row))

    def clear(self):
        self.L.llama_memory_clear(self.L.llama_get_memory(self.ctx), True)

    def close(self):
        self.L.llama_batch_free(self.batch)
        self.L.llama_free(self.ctx)
        self.L.llama_model_free(self.model)


def parallel_decode(a, n_seq):
    """Aggregate tokens/s of n_seq sequences decoded greedily in one batch per step (prefill not timed)."""
    rc = RawContext(a, n_seq * (a.prompt + a.gen + 32), max(a.prompt, n_seq), n_seq)
    best = 0.0
    for _ in range(a.reps):
        rc.clear()
        toks = []
        for s in range(n_seq):
            prompt = token_ids(a.prompt, rc.n_vocab, seed=12345 + s)
            rc.decode([(t, p, s, p == a.prompt - 1) for p, t in enumerate(prompt)])
            toks.append(rc.greedy(a.prompt - 1))
        t0 = time.perf_counter()
        for step in range(a.gen):
            rc.decode([(toks[s], a.prompt + step, s, True) for s in range(n_seq)])
            toks = [rc.greedy(s) for s in range(n_seq)]
        best = max(best, n_seq * a.gen / (time.perf_counter() - t0))
    rc.close()
    return best


def long_context(a):
    """Prefill of a.prompt tokens in a.ubatch-token passes, then a.gen greedy tokens at that depth."""
    ub = a.ubatch or 512
    t0 = time.perf_counter()
    rc = RawContext(a, a.prompt + a.gen + 32, ub, 1)
    load = time.perf_counter() - t0
    prompt = token_ids(a.prompt, rc.n_vocab)
    t0 = time.perf_counter()
    for start in range(0, a.prompt, ub):
        chunk = prompt[start:start + ub]
        rc.decode([(t, start + i, 0, start + i == a.prompt - 1) for i, t in enumerate(chunk)])
    tok = rc.greedy(len(chunk) - 1)
    pp = time.perf_counter() - t0
    t0 = time.perf_counter()
    for step in range(a.gen):
        rc.decode([(tok, a.prompt + step, 0, True)])
        tok = rc.greedy(0)
    tg = a.gen / (time.perf_counter() - t0)
    print("engine: llama.cpp (llama-cpp-python, llama_decode batches)")
    print(f"load_s: {load:.4f}")
    print(f"pp_tok_s: {a.prompt / pp:.2f}")
    print(f"ttft_s: {pp:.4f}")
    print(f"tg_tok_s: {tg:.2f}")
    print(f"peak_rss_mb: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f}")
    rc.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--parallel", type=int, default=0)
    ap.add_argument("--ubatch", type=int, default=0)
    ap.add_argument("--decode-after-prompt", action="store_true")
    ap.add_argument("--flash-attn", action="store_true")
    a = ap.parse_args()
    if a.parallel > 0:
        print("engine: llama.cpp (llama-cpp-python, llama_decode batches)")
        print(f"parallel_1_tok_s: {parallel_decode(a, 1):.2f}")
        print(f"parallel_n_tok_s: {parallel_decode(a, a.parallel):.2f}")
        return
    if a.decode_after_prompt:
        return long_context(a)
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
        first = last_greedy(llm, n_vocab)
        dt = time.perf_counter() - t0
        pp.append(a.prompt / dt)
        ttft.append(dt)
        llm.reset()
        llm.eval(prompt[:16])
        tok = last_greedy(llm, n_vocab)
        t0 = time.perf_counter()
        for _ in range(a.gen):
            llm.eval([tok])
            tok = last_greedy(llm, n_vocab)
        tg.append(a.gen / (time.perf_counter() - t0))
    print(f"engine: llama.cpp (llama-cpp-python)")
    print(f"load_s: {load:.4f}")
    print(f"pp_tok_s: {statistics.median(pp):.2f}")
    print(f"ttft_s: {statistics.median(ttft):.4f}")
    print(f"tg_tok_s: {statistics.median(tg):.2f}")
    print(f"peak_rss_mb: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f}")


if __name__ == "__main__":
    main()
