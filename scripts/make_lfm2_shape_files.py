#!/usr/bin/env python3
"""Random-weight LFM2 GGUF files with the exact shapes of LFM2-350M and LFM2-1.2B, for `leap-bench model`
(speed only; never committed):

  lfm2-350m-shape   hidden 1024, ff 4608, 16 heads / 8 KV heads
  lfm2-1.2b-shape   hidden 2048, ff 8192, 32 heads / 8 KV heads
  both: 16 layers, attention at 2, 5, 8, 10, 12, 14 and short convolutions (kernel 3) elsewhere,
  vocab 65536, tied embeddings (no output.weight), a SentencePiece-style vocabulary of placeholder tokens
  (byte tokens <0x00>..<0xFF> included) so that llama.cpp and LEAP both load it.

Each shape is written once in F16 (OUT_DIR/<shape>-f16.gguf) and quantized by llama.cpp's own quantizer
(llama-cpp-python's llama_model_quantize, the same mixes as llama-quantize: Q4_K_M keeps some tensors in Q6_K,
and so on) into OUT_DIR/<shape>-<type>.gguf. Files that exist are kept.

Usage (LEAP_LLAMA_PYTHON: a Python with llama-cpp-python 0.3.36, numpy and gguf):
  $LEAP_LLAMA_PYTHON scripts/make_lfm2_shape_files.py OUT_DIR [--shapes 350m,1.2b]
      [--types q4_0,q4_k_m,q5_k_m,q6_k,q8_0] [--threads 2]
"""
import argparse
import ctypes
import os
import sys

import numpy as np
import gguf

SHAPES = {
    "350m": dict(n_embd=1024, n_ff=4608, n_head=16, n_kv=8),
    "1.2b": dict(n_embd=2048, n_ff=8192, n_head=32, n_kv=8),
}
ATTENTION = (2, 5, 8, 10, 12, 14)
N_LAYER = 16
VOCAB = 65536

rng = np.random.default_rng(2026)


def mat(rows, cols, scale=None):
    """[rows, cols] (GGUF ne = [cols, rows]) in F16: N(0, 1/cols) like an initialised projection."""
    a = rng.standard_normal((rows, cols), dtype=np.float32)
    a *= scale or cols ** -0.5
    return a.astype(np.float16)


def vec(n, around=1.0, spread=0.1):
    return (around + spread * rng.standard_normal(n)).astype(np.float32)


def write_vocab(w):
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [2, 3, 3] + [6] * 256
    tokens += [f"\u2581t{i}" for i in range(VOCAB - len(tokens))]
    types += [1] * (VOCAB - len(types))
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([-float(i) for i in range(VOCAB)])
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)


def write_f16(path, n_embd, n_ff, n_head, n_kv):
    w = gguf.GGUFWriter(path, "lfm2")
    w.add_name(os.path.basename(path))
    w.add_block_count(N_LAYER)
    w.add_context_length(128000)
    w.add_embedding_length(n_embd)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv([n_kv if i in ATTENTION else 0 for i in range(N_LAYER)])
    w.add_rope_freq_base(1000000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_shortconv_l_cache(3)
    w.add_vocab_size(VOCAB)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    write_vocab(w)
    w.add_tensor("token_embd.weight", mat(VOCAB, n_embd))
    w.add_tensor("token_embd_norm.weight", vec(n_embd))
    hd = n_embd // n_head
    for i in range(N_LAYER):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", vec(n_embd))
        w.add_tensor(p + "ffn_norm.weight", vec(n_embd))
        w.add_tensor(p + "ffn_gate.weight", mat(n_ff, n_embd))
        w.add_tensor(p + "ffn_up.weight", mat(n_ff, n_embd))
        w.add_tensor(p + "ffn_down.weight", mat(n_embd, n_ff))
        if i in ATTENTION:
            w.add_tensor(p + "attn_q.weight", mat(n_embd, n_embd))
            w.add_tensor(p + "attn_k.weight", mat(n_kv * hd, n_embd))
            w.add_tensor(p + "attn_v.weight", mat(n_kv * hd, n_embd))
            w.add_tensor(p + "attn_output.weight", mat(n_embd, n_embd))
            w.add_tensor(p + "attn_q_norm.weight", vec(hd))
            w.add_tensor(p + "attn_k_norm.weight", vec(hd))
        else:
            w.add_tensor(p + "shortconv.conv.weight", (0.5 * rng.standard_normal((n_embd, 3))).astype(np.float32))
            w.add_tensor(p + "shortconv.in_proj.weight", mat(3 * n_embd, n_embd))
            w.add_tensor(p + "shortconv.out_proj.weight", mat(n_embd, n_embd))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def quantize(src, dst, ftype, threads):
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    params.nthread = threads
    rc = llama_cpp.llama_model_quantize(src.encode(), dst.encode(), ctypes.byref(params))
    if rc != 0:
        sys.exit(f"llama_model_quantize({dst}) failed: {rc}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--shapes", default="350m,1.2b")
    ap.add_argument("--types", default="q4_0,q4_k_m,q5_k_m,q6_k,q8_0")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    import llama_cpp

    ftypes = {"q4_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0, "q4_k_m": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M,
              "q5_k_m": llama_cpp.LLAMA_FTYPE_MOSTLY_Q5_K_M, "q6_k": llama_cpp.LLAMA_FTYPE_MOSTLY_Q6_K,
              "q8_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0}
    os.makedirs(a.out_dir, exist_ok=True)
    for shape in a.shapes.split(","):
        base = os.path.join(a.out_dir, f"lfm2-{shape}-shape")
        f16 = base + "-f16.gguf"
        if not os.path.exists(f16):
            print(f"writing {f16}", flush=True)
            write_f16(f16 + ".tmp", **SHAPES[shape])
            os.replace(f16 + ".tmp", f16)
        for t in a.types.split(","):
            dst = f"{base}-{t}.gguf"
            if os.path.exists(dst):
                continue
            print(f"quantizing {dst}", flush=True)
            quantize(f16, dst + ".tmp", ftypes[t], a.threads)
            os.replace(dst + ".tmp", dst)
            print(f"  {os.path.getsize(dst) / 1e6:.0f} MB", flush=True)


if __name__ == "__main__":
    main()
