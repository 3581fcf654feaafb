#!/usr/bin/env python3
"""Time to first token for an image plus a short question, side by side: libleap (through its Python package) and
llama.cpp mtmd, on the same files, pixels, prompt and threads. Run with llama-cpp-python's python.

  make DIR    writes DIR/text-lfm2-350m-q8_0.gguf: random weights of LFM2-350M's shapes (hidden 1024, ff 4608,
              16/8 heads, 16 layers with attention at 2, 5, 8, 10, 12, 14), Q8_0, with make_tiny_lfm2's vocabulary
              plus LFM2-VL's image markers (the output head is therefore smaller than the real model's 65536 rows:
              it runs once per first token). The projectors come from bench_vision_mtmd.py make DIR.
  time DIR [--mmproj f16|q8_0] [--threads 2] [--reps 3]
              for a 512x512 and a 1024x768 JPEG: best-of-REPS seconds from the request to the first token's
              logits, each in a fresh conversation / context, printed as `key: value` lines with the ratio.

libleap is loaded from LEAP_LIBRARY_PATH (default build/lib/libleap.so); gguf from LEAP_GGUF_PY (llama.cpp's
gguf-py folder) when set, else the installed package. Never committed files, never a test.
"""
import argparse
import ctypes
import io
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "fixtures"))
if os.environ.get("LEAP_GGUF_PY"):  # llama.cpp's gguf-py folder, else the installed gguf package
    sys.path.insert(0, os.environ["LEAP_GGUF_PY"])
PROMPT = "<|startoftext|><|im_start|>user\n{marker}What is in this image?<|im_end|>\n<|im_start|>assistant\n"
TEXT = "text-lfm2-350m-q8_0.gguf"


def make(out: str) -> None:
    import make_tiny_lfm2 as tiny
    from gguf import GGMLQuantizationType as QT

    tokens, types, merges = tiny.build_vocab()
    markers = ["<|image_start|>", "<|image_end|>", "<|img_thumbnail|>", "<image>"]
    markers += [f"<|img_row_{r}_col_{c}|>" for r in range(1, 11) for c in range(1, 11)]
    vocab = (tokens + markers, types + [3] * len(markers), merges)
    spec = tiny.Spec("lfm2-350m-shape-q8_0", QT.Q8_0, 1024, 16, 8, 4608, tiny.REAL_16, seed=3)
    tiny.make_weights(spec, n_vocab=len(vocab[0]))
    tiny.write_gguf(spec, os.path.join(out, TEXT), vocab=vocab)


def images():
    from PIL import Image
    from vision_fixture_images import photo_rgb8

    out = {}
    for (w, h) in [(512, 512), (1024, 768)]:
        buf = io.BytesIO()
        Image.fromarray(photo_rgb8(h, w)).save(buf, format="JPEG", quality=92)
        jpeg = buf.getvalue()
        out[f"{w}x{h}"] = (jpeg, np.asarray(Image.open(io.BytesIO(jpeg)).convert("RGB")))
    return out


def time_libleap(text: str, mmproj: str, jpeg: bytes, threads: int, reps: int) -> float:
    sys.path.insert(0, os.path.join(REPO, "bindings", "python"))
    os.environ.setdefault("LEAP_LIBRARY_PATH", os.path.join(REPO, "build", "lib", "libleap.so"))
    import leap

    best = float("inf")
    with leap.load_model(text, mmproj_path=mmproj, cpu_threads=threads, context_size=4096) as model:
        for _ in range(reps):
            conv = model.create_conversation()
            msg = leap.ChatMessage(leap.Role.USER, [leap.Image(jpeg), leap.Text("What is in this image?")])
            t0 = time.perf_counter()
            for e in conv.generate_response(msg, leap.GenerationOptions(temperature=0, max_tokens=1)):
                if isinstance(e, leap.Complete):
                    best = min(best, time.perf_counter() - t0)
    return best


def time_mtmd(text: str, mmproj: str, rgb: np.ndarray, threads: int, reps: int) -> float:
    import llama_cpp
    from llama_cpp import mtmd_cpp as mtmd
    from make_vision_mtmd_goldens import bitmap_from_rgb, tokenize

    llama_cpp.llama_backend_init()
    mp = llama_cpp.llama_model_default_params()
    model = llama_cpp.llama_model_load_from_file(text.encode(), mp)
    p = mtmd.mtmd_context_params_default()
    p.use_gpu = False
    p.n_threads = threads
    p.print_timings = False
    ctx = mtmd.mtmd_init_from_file(mmproj.encode(), model, p)
    marker = mtmd.mtmd_default_marker().decode()
    best = float("inf")
    for _ in range(reps):
        cp = llama_cpp.llama_context_default_params()
        cp.n_ctx, cp.n_batch, cp.n_ubatch = 4096, 512, 512
        cp.n_threads = cp.n_threads_batch = threads
        lctx = llama_cpp.llama_init_from_model(model, cp)
        t0 = time.perf_counter()
        chunks = tokenize(ctx, PROMPT.format(marker=marker), bitmap_from_rgb(rgb))
        n_past = llama_cpp.llama_pos(0)
        assert mtmd.mtmd_helper_eval_chunks(ctx, lctx, chunks, 0, 0, cp.n_batch, True, ctypes.byref(n_past)) == 0
        llama_cpp.llama_get_logits_ith(lctx, -1)
        best = min(best, time.perf_counter() - t0)
        llama_cpp.llama_free(lctx)
    mtmd.mtmd_free(ctx)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["make", "time"])
    ap.add_argument("dir")
    ap.add_argument("--mmproj", default="f16")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    if a.command == "make":
        return make(a.dir)
    text, mmproj = os.path.join(a.dir, TEXT), os.path.join(a.dir, f"mmproj-{a.mmproj}.gguf")
    for name, (jpeg, rgb) in images().items():
        ours = time_libleap(text, mmproj, jpeg, a.threads, a.reps)
        ref = time_mtmd(text, mmproj, rgb, a.threads, a.reps)
        print(f"ttft_{name}_libleap_s: {ours:.3f}")
        print(f"ttft_{name}_mtmd_s: {ref:.3f}")
        print(f"ttft_{name}_ratio: {ref / ours:.2f}x")


if __name__ == "__main__":
    main()
