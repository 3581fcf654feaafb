#!/usr/bin/env python3
"""llama-cpp-python's prompt-lookup decoding for `leap-bench speculative --compare`: the same greedy chat
turns (the prompt sets leap-bench writes to --prompts, a JSON object {"copy": [...], "chat": [...]}) with
and without `LlamaPromptLookupDecoding` (its defaults: 2-gram lookup, 10 tokens per draft).

Timed as leap's statistics time a turn: every token the model draws is stamped as it is drawn, and
tok/s is (tokens - 1) over the time from the first token to the end of the turn, summed over the turns;
the end-of-generation token is not counted. Greedy with no repetition penalty (the chat handler's
default is 1.1). The prompt is the one libleap renders: the GGUF's chat template when it has one (both
sides render it), else the ChatML libleap falls back to, tokenized here with the model's BOS.

Prints `key: value` lines: copy_plain_tok_s, copy_lookup_tok_s, chat_plain_tok_s, chat_lookup_tok_s, and
for each the longest pause between two drawn tokens (*_longest_gap_s): llama.cpp's threads wait for
each other at every graph node, so when other processes hold the cores a token can take seconds; a
long gap there says the figure measured the machine's load more than the decoding. --verbose prints
each turn on stderr.

Usage: python3 scripts/bench_prompt_lookup.py MODEL.gguf --prompts FILE [--threads N] [--gen 128] [--reps 1]
                                              [--verbose]
"""
import argparse
import json
import sys
import time

# libleap's template for a GGUF that carries none (ChatTemplate.chatML): no system turn, no stop text.
CHATML_USER, CHATML_ASSISTANT = "<|im_start|>user\n", "<|im_end|>\n<|im_start|>assistant\n"


class TurnClock:
    """Stamps every token `llm.generate` yields, which is every token a completion draws (drafted
    tokens are drawn one by one once verified)."""

    def __init__(self, llm):
        self.stamps = []
        self.tokens = []
        generate = llm.generate

        def stamped(*args, **kwargs):
            for token in generate(*args, **kwargs):
                self.stamps.append(time.perf_counter())
                self.tokens.append(token)
                yield token

        llm.generate = stamped

    def start(self):
        self.stamps.clear()
        self.tokens.clear()


def turn(llm, clock, prompt, gen, is_eog):
    """One greedy turn, streamed; returns (tokens after the first, seconds after the first, longest gap
    between two drawn tokens, the last one to the turn's end included)."""
    clock.start()
    args = dict(temperature=0.0, repeat_penalty=1.0, max_tokens=gen, stream=True)
    if llm.chat_handler is None and llm.chat_format is None:
        chunks = llm.create_completion(CHATML_USER + prompt + CHATML_ASSISTANT, **args)
    else:
        chunks = llm.create_chat_completion(messages=[{"role": "user", "content": prompt}], **args)
    for _ in chunks:
        pass
    end = time.perf_counter()
    drawn = [t for t in clock.tokens if not is_eog(t)]
    if not clock.stamps:
        return 0, 0.0, 0.0
    gaps = [b - a for a, b in zip(clock.stamps, clock.stamps[1:] + [end])]
    return max(0, len(drawn) - 1), end - clock.stamps[0], max(gaps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--prompts", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    from llama_cpp import Llama, llama_cpp
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    with open(a.prompts) as f:
        sets = json.load(f)
    common = dict(n_ctx=2048, n_threads=a.threads, n_threads_batch=a.threads, verbose=False)
    plain = Llama(a.model, **common)
    lookup = Llama(a.model, draft_model=LlamaPromptLookupDecoding(), **common)
    if "tokenizer.chat_template" not in plain.metadata:
        # llama-cpp-python would fall back to llama-2's format; libleap renders ChatML (see CHATML_USER).
        for llm in (plain, lookup):
            llm.chat_format, llm.chat_handler = None, None
    vocab = plain._model.vocab
    is_eog = lambda t: bool(llama_cpp.llama_vocab_is_eog(vocab, t))
    clocks = {"plain": TurnClock(plain), "lookup": TurnClock(lookup)}
    for key in ("copy", "chat"):
        totals = {"plain": [0, 0.0, 0.0], "lookup": [0, 0.0, 0.0]}
        for _ in range(a.reps):
            for i, p in enumerate(sets[key]):
                # Interleaved, as leap-bench does, so that load changes hit both alike.
                for name, llm in (("plain", plain), ("lookup", lookup)):
                    llm.reset()
                    n, s, gap = turn(llm, clocks[name], p, a.gen, is_eog)
                    totals[name][0] += n
                    totals[name][1] += s
                    totals[name][2] = max(totals[name][2], gap)
                    if a.verbose:
                        line = f"{key}[{i}] {name}: {n + 1} tokens, {n / s if s > 0 else 0:.1f} tok/s after the first, " \
                               f"longest gap {gap:.3f} s"
                        if name == "lookup":
                            # Greedy either way: the lookup turn should draw the plain turn's tokens, up to the
                            # rounding of a batched pass (which can flip a near tie).
                            ref, got = clocks["plain"].tokens, clocks["lookup"].tokens
                            same = next((j for j, (x, y) in enumerate(zip(ref, got)) if x != y), min(len(ref), len(got)))
                            line += f", its first {same} tokens as without"
                        print(line, file=sys.stderr)
        for name, (n, s, gap) in totals.items():
            print(f"{key}_{name}_tok_s: {n / s if s > 0 else 0:.3f}")
            print(f"{key}_{name}_longest_gap_s: {gap:.3f}")


if __name__ == "__main__":
    main()
