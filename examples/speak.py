#!/usr/bin/env python3
"""Asks a model that speaks (LFM2.5-Audio: the model GGUF with vocoder-*.gguf and tokenizer-*.gguf) for a spoken
answer, streaming the text and writing the audio to a WAV file as it arrives:

    python3 examples/speak.py MODEL.gguf OUT.wav [--vocoder V.gguf --tokenizer T.gguf] [--prompt TEXT] [--system TEXT]
        [--max-tokens N] [--seed N]

Text is greedy, but audio frames are sampled (the runner's temperature and top-k) and fed back, so the text after
the first frames depends on the draws: --seed makes a run repeatable.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bindings", "python"))
import leap  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--vocoder")
    ap.add_argument("--tokenizer")
    ap.add_argument("--prompt", default="Say hello.")
    ap.add_argument("--system", default="Respond with interleaved text and audio.")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--seed", type=int)
    args = ap.parse_args()
    with leap.load_model(args.model, audio_decoder_path=args.vocoder, audio_tokenizer_path=args.tokenizer) as model:
        if not model.supports_audio_output:
            sys.exit(f"{args.model} does not speak (give --vocoder and --tokenizer)")
        conv = model.create_conversation(args.system)
        samples, rate = [], 24000
        options = leap.GenerationOptions(temperature=0, max_tokens=args.max_tokens, rng_seed=args.seed)
        for event in conv.generate_response(args.prompt, options):
            if isinstance(event, leap.Chunk):
                print(event.text, end="", flush=True)
            elif isinstance(event, leap.AudioSample):   # 80 ms frames, as they are made
                samples.extend(event.samples)
                rate = event.sample_rate
        with open(args.out, "wb") as f:
            f.write(leap.audio.encode_wav(samples, rate, encoding="s16"))
        print(f"\n[{len(samples) / rate:.2f} s of audio written to {args.out}]", file=sys.stderr)


if __name__ == "__main__":
    main()
