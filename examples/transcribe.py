#!/usr/bin/env python3
"""Transcribes a WAV file with an audio model (LFM2-Audio: the model GGUF and its mmproj-*.gguf), streaming the text:

    python3 examples/transcribe.py MODEL.gguf AUDIO.wav [--mmproj MMPROJ.gguf]

The WAV must be mono, at any sample rate. Also prints how many embedding rows the audio became (one per 80 ms)."""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bindings", "python"))
import leap  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("model")
    ap.add_argument("audio")
    ap.add_argument("--mmproj")
    ap.add_argument("--max-tokens", type=int, default=256)
    args = ap.parse_args()
    with open(args.audio, "rb") as f:
        audio = leap.Audio(f.read())
    with leap.load_model(args.model, mmproj_path=args.mmproj) as model:
        if not model.supports_audio_input:
            sys.exit(f"{args.model} has no audio encoder (give --mmproj)")
        print(f"[the audio is {model.embed_audio(audio).shape[0]} embedding rows]", file=sys.stderr)
        conv = model.create_conversation("Perform ASR.")
        message = leap.ChatMessage(leap.Role.USER, [audio])
        for event in conv.generate_response(message, leap.GenerationOptions(temperature=0, max_tokens=args.max_tokens)):
            if isinstance(event, leap.Chunk):
                print(event.text, end="", flush=True)
            elif isinstance(event, leap.Complete):
                print(f"\n[{event.finish_reason.name.lower()}; {event.stats.prompt_tokens} prompt positions]", file=sys.stderr)


if __name__ == "__main__":
    main()
