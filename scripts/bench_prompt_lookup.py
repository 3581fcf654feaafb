#!/usr/bin/env python3
"""llama-cpp-python's prompt-lookup decoding for `leap-bench speculative --compare`: the same greedy chat
turns (the prompt sets leap-bench writes to --prompts, a JSON object {"copy": [...], "chat": [...]}) with
and without `LlamaPromptLookupDecoding` (its defaults: 2-gram lookup, 10 tokens per draft), streamed; tok/s
counts the tokens after the first over the time after the first, as leap's statistics do.
Prints `key: value` lines: copy_plain_tok_s, copy_lookup_tok_s, chat_plain_tok_s, chat_lookup_tok_s.

Usage: python3 scripts/bench_prompt_lookup.py MODEL.gguf --prompts FILE [--threads N] [--gen 128] [--reps 1]
"""
import argparse
import json
import time


def turn(llm, prompt, gen):
    """Streams one greedy turn; returns (tokens after the first, seconds after the first)."""
    first = None
    n = 0
    for _ in llm.create_chat_completion(messages=[{"role": "user", "content": prompt}], temperature=0.0,
                                        max_tokens=gen, stream=True):
        n += 1
        if first is None:
            first = time.perf_counter()
    # The first chunk carries the role only; the last one the finish reason.
    return max(0, n - 3), (time.perf_counter() - first) if first else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--prompts", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--reps", type=int, default=1)
    a = ap.parse_args()
    from llama_cpp import Llama
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    with open(a.prompts) as f:
        sets = json.load(f)
    common = dict(n_ctx=2048, n_threads=a.threads, n_threads_batch=a.threads, verbose=False)
    plain = Llama(a.model, **common)
    lookup = Llama(a.model, draft_model=LlamaPromptLookupDecoding(), **common)
    if str(plain.metadata.get("general.architecture", "")).startswith("gemma"):
        # It does not recognise Gemma 3's template: it would fall back to llama-2's format, and the model
        # ends its turn at once.
        for llm in (plain, lookup):
            llm.chat_format, llm.chat_handler = "gemma", None
    for key in ("copy", "chat"):
        totals = {"plain": [0, 0.0], "lookup": [0, 0.0]}
        for _ in range(a.reps):
            for p in sets[key]:
                # Interleaved, as leap-bench does, so that load changes hit both alike.
                for name, llm in (("plain", plain), ("lookup", lookup)):
                    llm.reset()
                    n, s = turn(llm, p, a.gen)
                    totals[name][0] += n
                    totals[name][1] += s
        for name, (n, s) in totals.items():
            print(f"{key}_{name}_tok_s: {n / s if s > 0 else 0:.3f}")


if __name__ == "__main__":
    main()
