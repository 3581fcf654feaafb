#!/usr/bin/env python3
"""The llama.cpp side of `leap-bench vision` (run with llama-cpp-python's python).

  make DIR    writes random-weight LFM2-VL-450M-shaped vision projectors into DIR (never committed):
              mmproj-f16.gguf and mmproj-q8_0.gguf (SigLIP2 base: hidden 768, 12 blocks, 12 heads, MLP 3072,
              patch 16, 16x16 position grid; projector 3072 -> 2560 -> 1024, the shapes of LFM2-VL-450M's
              config.json), with the tensor names and metadata of llama.cpp's converter, plus text-vocab.gguf,
              a tensor-less `llama` GGUF of width 1024 that mtmd loads vocab-only (it checks the text width)
  time DIR TYPE [--threads 2] [--reps 3] [--images 512x512,1024x768]
              mtmd_encode_chunk time of every image chunk of a 512x512 and a 1024x768 image (the test pattern
              of the vision fixtures), best of REPS, printed as `key: value` lines: mtmd_512x512_ms,
              mtmd_512x512_cpu_ms (the process's CPU time in that run, all of ggml's threads),
              mtmd_512x512_chunks, mtmd_512x512_tokens, the same for 1024x768

gguf comes from LEAP_GGUF_PY (llama.cpp's gguf-py folder) when set, else the installed package.
"""
import argparse
import ctypes
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "fixtures"))
from vision_fixture_images import image_rgb8  # noqa: E402

D, LAYERS, HEADS, FF, PATCH, GRID = 768, 12, 12, 3072, 16, 16
MERGE, PROJ_HIDDEN, TEXT_HIDDEN = 2, 2560, 1024


def gguf_module():
    if os.environ.get("LEAP_GGUF_PY"):
        sys.path.insert(0, os.environ["LEAP_GGUF_PY"])
    import gguf
    return gguf


def write_mmproj(path: str, qtype_name: str) -> None:
    gguf = gguf_module()
    QT = gguf.GGMLQuantizationType
    qtype = QT.F16 if qtype_name == "f16" else QT.Q8_0
    rng = np.random.default_rng(0)
    w = gguf.GGUFWriter(path, "clip")
    w.add_bool("clip.has_vision_encoder", True)
    w.add_string("clip.projector_type", "lfm2")
    w.add_uint32("clip.vision.projection_dim", TEXT_HIDDEN)
    w.add_uint32("clip.vision.image_size", 256)
    w.add_uint32("clip.vision.patch_size", PATCH)
    w.add_uint32("clip.vision.embedding_length", D)
    w.add_uint32("clip.vision.feed_forward_length", FF)
    w.add_uint32("clip.vision.block_count", LAYERS)
    w.add_uint32("clip.vision.attention.head_count", HEADS)
    w.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5])
    w.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])
    w.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-6)
    w.add_uint32("clip.vision.projector.scale_factor", MERGE)
    w.add_bool("clip.use_gelu", True)

    def vec(name, n, base=0.0, s=0.05):
        w.add_tensor(name, (base + s * rng.standard_normal(n)).astype(np.float32))

    def mat(name, rows, cols, typ=qtype):
        a = (rng.standard_normal((rows, cols), dtype=np.float32) / np.sqrt(cols)).astype(np.float32)
        if typ == QT.F16:
            w.add_tensor(name, a.astype(np.float16))
        elif typ == QT.F32:
            w.add_tensor(name, a)
        else:
            q = gguf.quants.quantize(a, typ)
            w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=typ)

    # As llama.cpp's converter writes it: the 4-D patch kernel in F16 in an f16 file and in F32 in a q8_0 one.
    kernel = (rng.standard_normal((D, 3, PATCH, PATCH), dtype=np.float32) / np.sqrt(3 * PATCH * PATCH))
    w.add_tensor("v.patch_embd.weight", kernel.astype(np.float16 if qtype == QT.F16 else np.float32))
    vec("v.patch_embd.bias", D)
    w.add_tensor("v.position_embd.weight", (0.5 * rng.standard_normal((GRID * GRID, D))).astype(np.float32))
    for i in range(LAYERS):
        p = f"v.blk.{i}."
        vec(p + "ln1.weight", D, 1.0, 0.1)
        vec(p + "ln1.bias", D)
        vec(p + "ln2.weight", D, 1.0, 0.1)
        vec(p + "ln2.bias", D)
        for n in ["attn_q", "attn_k", "attn_v", "attn_out"]:
            mat(p + n + ".weight", D, D)
            vec(p + n + ".bias", D)
        mat(p + "ffn_up.weight", FF, D)
        vec(p + "ffn_up.bias", FF)
        mat(p + "ffn_down.weight", D, FF)
        vec(p + "ffn_down.bias", D)
    vec("v.post_ln.weight", D, 1.0, 0.1)
    vec("v.post_ln.bias", D)
    M = D * MERGE * MERGE
    vec("mm.input_norm.weight", M, 1.0, 0.1)
    vec("mm.input_norm.bias", M)
    mat("mm.1.weight", PROJ_HIDDEN, M)
    vec("mm.1.bias", PROJ_HIDDEN)
    mat("mm.2.weight", TEXT_HIDDEN, PROJ_HIDDEN)
    vec("mm.2.bias", TEXT_HIDDEN)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_text_vocab(path: str) -> None:
    """A tensor-less llama GGUF with LFM2-VL's image markers, loaded vocab-only by mtmd."""
    gguf = gguf_module()
    tokens = ["<|pad|>", "<|startoftext|>", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|image_start|>",
              "<|image_end|>", "<|img_thumbnail|>", "<image>"]
    tokens += [f"<|img_row_{r}_col_{c}|>" for r in range(1, 11) for c in range(1, 11)]
    types = [gguf.TokenType.CONTROL] * len(tokens)
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    tokens += [chr(c) for c in cs] + ["\u0120t"]  # the byte alphabet and one merge (llama.cpp needs merges)
    types += [gguf.TokenType.NORMAL] * 257
    w = gguf.GGUFWriter(path, "llama")
    w.add_block_count(1)
    w.add_context_length(4096)
    w.add_embedding_length(TEXT_HIDDEN)
    w.add_feed_forward_length(4 * TEXT_HIDDEN)
    w.add_head_count(16)
    w.add_head_count_kv(16)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(len(tokens))
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(["\u0120 t"])
    w.add_bos_token_id(1)
    w.add_eos_token_id(4)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def make(d: str) -> None:
    os.makedirs(d, exist_ok=True)
    for t in ["f16", "q8_0"]:
        p = os.path.join(d, f"mmproj-{t}.gguf")
        if not os.path.exists(p):
            write_mmproj(p + ".tmp", t)
            os.rename(p + ".tmp", p)
    p = os.path.join(d, "text-vocab.gguf")
    if not os.path.exists(p):
        write_text_vocab(p)


def time_encode(d: str, qtype: str, threads: int, reps: int, keys: list) -> None:
    import llama_cpp
    from llama_cpp import mtmd_cpp as mtmd

    llama_cpp.llama_backend_init()
    mp = llama_cpp.llama_model_default_params()
    mp.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(os.path.join(d, "text-vocab.gguf").encode(), mp)
    cp = mtmd.mtmd_context_params_default()
    cp.use_gpu = False
    cp.n_threads = threads
    cp.print_timings = False
    ctx = mtmd.mtmd_init_from_file(os.path.join(d, f"mmproj-{qtype}.gguf").encode(), model, cp)
    if not ctx:
        sys.exit("mtmd_init_from_file failed")
    marker = mtmd.mtmd_default_marker()
    for (h, w, key) in [(512, 512, "512x512"), (768, 1024, "1024x768")]:
        if key not in keys:
            continue
        rgb = image_rgb8(h, w, 1)
        data = (ctypes.c_uint8 * rgb.size).from_buffer_copy(rgb.tobytes())
        bmp = mtmd.mtmd_bitmap_init(w, h, data)
        chunks = mtmd.mtmd_input_chunks_init()
        t = mtmd.mtmd_input_text()
        t.text, t.text_len, t.add_special, t.parse_special = marker, len(marker), False, True
        assert mtmd.mtmd_tokenize(ctx, chunks, ctypes.byref(t), (mtmd.mtmd_bitmap_p_ctypes * 1)(bmp), 1) == 0
        images = [mtmd.mtmd_input_chunks_get(chunks, i) for i in range(mtmd.mtmd_input_chunks_size(chunks))]
        images = [c for c in images if mtmd.mtmd_input_chunk_get_type(c) != 0]
        best, best_cpu = float("inf"), float("inf")
        for _ in range(reps):
            t0, c0 = time.perf_counter(), time.process_time()
            for c in images:
                assert mtmd.mtmd_encode_chunk(ctx, c) == 0
            best = min(best, time.perf_counter() - t0)
            best_cpu = min(best_cpu, time.process_time() - c0)
        print(f"mtmd_{key}_ms: {best * 1e3:.1f}")
        print(f"mtmd_{key}_cpu_ms: {best_cpu * 1e3:.1f}")
        print(f"mtmd_{key}_chunks: {len(images)}")
        print(f"mtmd_{key}_tokens: {sum(mtmd.mtmd_input_chunk_get_n_tokens(c) for c in images)}")
        sys.stdout.flush()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["make", "time"])
    ap.add_argument("dir")
    ap.add_argument("type", nargs="?", default="f16")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--images", default="512x512,1024x768")
    a = ap.parse_args()
    if a.command == "make":
        make(a.dir)
    else:
        time_encode(a.dir, a.type, a.threads, a.reps, a.images.split(","))


if __name__ == "__main__":
    main()
