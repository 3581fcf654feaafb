#!/usr/bin/env python3
"""Asks a vision model (LFM2-VL: the model GGUF and its mmproj-*.gguf) about a JPEG file, streaming the answer:

    python3 examples/describe_image.py MODEL.gguf IMAGE.jpg [--mmproj MMPROJ.gguf] [--question TEXT]

Also prints the shape of the image's embeddings (what the model sees: tiles, then the thumbnail)."""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bindings", "python"))
import leap  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("model")
    ap.add_argument("image")
    ap.add_argument("--mmproj")
    ap.add_argument("--question", default="Describe this image.")
    ap.add_argument("--max-tokens", type=int, default=256)
    args = ap.parse_args()
    with open(args.image, "rb") as f:
        image = leap.Image(f.read())
    with leap.load_model(args.model, mmproj_path=args.mmproj) as model:
        if not model.supports_images:
            sys.exit(f"{args.model} has no vision projector (give --mmproj)")
        rows = model.embed_image(image)
        print(f"[the image is {rows.shape[0]} embedding rows of {rows.shape[1]}]", file=sys.stderr)
        conv = model.create_conversation()
        message = leap.ChatMessage(leap.Role.USER, [image, leap.Text(args.question)])
        for event in conv.generate_response(message, leap.GenerationOptions(temperature=0, max_tokens=args.max_tokens)):
            if isinstance(event, leap.Chunk):
                print(event.text, end="", flush=True)
            elif isinstance(event, leap.Complete):
                s = event.stats
                print(f"\n[{event.finish_reason.name.lower()}; {s.prompt_tokens} prompt positions, "
                      f"{s.time_to_first_token:.2f} s to the first token]", file=sys.stderr)


if __name__ == "__main__":
    main()
