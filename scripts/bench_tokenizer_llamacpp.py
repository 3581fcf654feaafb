#!/usr/bin/env python3
"""llama.cpp's tokenization throughput on a text file (for `leap-bench tokenizer`).

Calls llama_tokenize once per run with a buffer large enough for the result (llama_cpp.Llama.tokenize
would tokenize twice for vocab-only models, whose n_ctx_train is 0).

Usage: bench_tokenizer_llamacpp.py <model.gguf> <text-file> [runs] [ids-out-file]
(the ids of the last run are written to ids-out-file as little-endian int32 when given)
"""
import sys
import time

import llama_cpp


def main():
    path, text_path = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    text = open(text_path, "rb").read()
    m = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
    vocab = m._model.vocab
    buf = (llama_cpp.llama_token * (len(text) + 16))()
    best, n = float("inf"), 0
    for _ in range(runs):
        t0 = time.perf_counter()
        n = llama_cpp.llama_tokenize(vocab, text, len(text), buf, len(text) + 16, False, False)
        best = min(best, time.perf_counter() - t0)
    if len(sys.argv) > 4:
        with open(sys.argv[4], "wb") as f:
            f.write(bytes(memoryview(buf)[:n].cast("B")))
    name = path.rsplit("/", 1)[-1]
    print(f"llama.cpp tokenize {name}: {len(text) / best / 1e6:.2f} MB/s, {n / best / 1e6:.3f} M tokens/s "
          f"({n} tokens, {best * 1e3:.1f} ms best of {runs})")


if __name__ == "__main__":
    main()
