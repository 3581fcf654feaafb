#!/usr/bin/env python3
"""A streaming chat REPL in Python: python3 examples/chat.py MODEL.gguf [--system TEXT] [--prompt TEXT]

Uses the `leap` package from bindings/python (pip install ./bindings/python, or run from the repository).
Ctrl-C stops the current answer (the partial answer stays in the history)."""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bindings", "python"))
import leap  # noqa: E402


def answer(conv, text, options):
    try:
        for event in conv.generate_response(text, options):
            if isinstance(event, leap.Chunk):
                print(event.text, end="", flush=True)
            elif isinstance(event, leap.ReasoningChunk):
                print(f"\x1b[2m{event.reasoning}\x1b[0m", end="", file=sys.stderr, flush=True)
            elif isinstance(event, leap.FunctionCalls):
                print(f"\n[function calls] {event.function_calls}")
            elif isinstance(event, leap.Complete):
                s = event.stats
                print(f"\n[{event.finish_reason.name.lower()}; {s.completion_tokens} tokens, "
                      f"{s.tokens_per_second:.1f} tok/s, {s.cached_prompt_tokens} prompt tokens cached]", file=sys.stderr)
    except KeyboardInterrupt:
        conv.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("model")
    ap.add_argument("--system", default="You are a helpful assistant.")
    ap.add_argument("--prompt")
    ap.add_argument("--temperature", type=float)
    ap.add_argument("--seed", type=int)
    args = ap.parse_args()
    options = leap.GenerationOptions(temperature=args.temperature, rng_seed=args.seed)
    with leap.load_model(args.model) as model:
        conv = model.create_conversation(args.system)
        if args.prompt:
            answer(conv, args.prompt, options)
            return
        print(f"chatting with {model.model_id} ({model.architecture}); /quit to leave", file=sys.stderr)
        while True:
            try:
                line = input("> ")
            except EOFError:
                break
            if line.strip() == "/quit":
                break
            if line.strip():
                answer(conv, line, options)


if __name__ == "__main__":
    main()
