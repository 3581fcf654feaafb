#!/usr/bin/env python3
"""LFM2-Audio encoder benchmark helper for `leap-bench audio-encoder`.

  make-model OUT.gguf --type f16|q8_0
      Writes an lfm2a mmproj of the real encoder's shapes (d_model 512, 17 layers, 8 heads, FFN 2048,
      conv kernel 9, 256 subsampling channels, adapter 512 → 2048 → 2048) with random weights, in the layout
      llama.cpp's convert_hf_to_gguf.py --mmproj writes (tensor names and shapes, the ".conv" tensors and
      vectors in F32, the other matrices in the chosen type). Needs gguf-py (the vendored one:
      PYTHONPATH=<llama.cpp>/gguf-py) and numpy.
  time MODEL.gguf --seconds 10 60 --threads 2 --reps 3
      llama.cpp's figures through llama-cpp-python's mtmd bindings, from 16 kHz float samples (the same
      deterministic signal as BenchAudioEncoder.swift): mtmd_tokenize (the log-mel) plus mtmd_encode_chunk
      (encoder + adapter), median of the reps after one warm-up. Prints `key: value` lines:
      mtmd_<s>s_total_s, mtmd_<s>s_mel_s, mtmd_<s>s_encode_s, mtmd_<s>s_tokens.
"""
import argparse
import ctypes
import math
import os
import statistics
import sys
import time

import numpy as np

D, LAYERS, HEADS, FFN, KERNEL, CHANNELS, MELS, HIDDEN = 512, 17, 8, 2048, 9, 256, 128, 2048


def make_model(path, qtype_name):
    if os.environ.get("LLAMA_CPP_GGUF_PY"):  # gguf-py from a llama.cpp checkout, else the installed gguf
        sys.path.insert(0, os.environ["LLAMA_CPP_GGUF_PY"])
    import gguf
    from gguf import GGMLQuantizationType as QT
    qtype = {"f16": QT.F16, "q8_0": QT.Q8_0}[qtype_name]
    rng = np.random.default_rng(7)
    w = gguf.GGUFWriter(path, arch="clip")
    w.add_type("mmproj")
    w.add_file_type(1 if qtype == QT.F16 else 7)
    w.add_bool("clip.has_audio_encoder", True)
    w.add_uint32("clip.audio.projection_dim", HIDDEN)
    w.add_uint32("clip.audio.embedding_length", D)
    w.add_uint32("clip.audio.feed_forward_length", D)
    w.add_uint32("clip.audio.block_count", LAYERS)
    w.add_uint32("clip.audio.attention.head_count", HEADS)
    w.add_string("clip.projector_type", "lfm2a")
    w.add_uint32("clip.audio.num_mel_bins", MELS)
    w.add_float32("clip.audio.attention.layer_norm_epsilon", 1e-5)

    def add(name, arr, t=QT.F32):
        arr = arr.astype(np.float32)
        if t == QT.F32:
            w.add_tensor(name, arr)
        elif t == QT.F16:
            w.add_tensor(name, arr.astype(np.float16))
        else:
            q = gguf.quants.quantize(arr, t)
            w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=t)

    def lin(name, n_out, n_in, t=qtype, gain=1.0, bias=True):
        add(name + ".weight", rng.normal(0, gain / math.sqrt(n_in), (n_out, n_in)), t)
        if bias:
            add(name + ".bias", rng.normal(0, 0.1, n_out))

    def norm(name, n):
        add(name + ".weight", 1 + rng.normal(0, 0.1, n))
        add(name + ".bias", rng.normal(0, 0.1, n))

    # audio-output embedding table: llama.cpp reads its width (the output size) and needs >= mel_frames/2 rows
    add("a.position_embd.weight", rng.normal(0, 0.02, (4096, HIDDEN)), QT.F16)
    add("a.conv1d.0.weight", rng.normal(0, 1 / 3, (CHANNELS, 1, 3, 3)))
    for i in (0, 2, 3, 5, 6):
        add(f"a.conv1d.{i}.bias", rng.normal(0, 0.1, (CHANNELS, 1, 1)))
    for i in (2, 5):
        add(f"a.conv1d.{i}.weight", rng.normal(0, 1 / 3, (CHANNELS, 1, 3, 3)))
    for i in (3, 6):
        add(f"a.conv1d.{i}.weight", rng.normal(0, 1 / math.sqrt(CHANNELS), (CHANNELS, CHANNELS, 1, 1)))
    lin("a.pre_encode.out", D, CHANNELS * 16)
    for i in range(LAYERS):
        p = f"a.blk.{i}."
        for n in ("ffn_norm", "ffn_norm_1", "ln1", "ln2", "norm_conv"):
            norm(p + n, D)
        lin(p + "ffn_up", FFN, D)
        lin(p + "ffn_down", D, FFN, gain=0.5)
        lin(p + "ffn_up_1", FFN, D)
        lin(p + "ffn_down_1", D, FFN, gain=0.5)
        for n in ("attn_q", "attn_k", "attn_v"):
            lin(p + n, D, D)
        lin(p + "attn_out", D, D, gain=0.5)
        lin(p + "linear_pos", D, D, bias=False)
        add(p + "pos_bias_u", rng.normal(0, 0.1, (HEADS, D // HEADS)))
        add(p + "pos_bias_v", rng.normal(0, 0.1, (HEADS, D // HEADS)))
        lin(p + "conv_pw1", 2 * D, D, t=QT.F32)
        lin(p + "conv_pw2", D, D, t=QT.F32, gain=0.5)
        add(p + "conv_dw.weight", rng.normal(0, 1 / 3, (D, KERNEL)))
        add(p + "conv_dw.bias", rng.normal(0, 0.1, D))
        add(p + "conv_norm.weight", 0.5 + rng.random(D))
        add(p + "conv_norm.bias", rng.normal(0, 0.1, D))
    norm("mm.a.mlp.0", D)
    lin("mm.a.mlp.1", HIDDEN, D)
    lin("mm.a.mlp.3", HIDDEN, HIDDEN)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def signal(n):
    """Same samples as BenchAudioEncoder.swift: a swept tone plus LCG noise."""
    i = np.arange(n, dtype=np.float64)
    s = np.empty(n, dtype=np.float64)
    state = 12345
    noise = np.empty(n)
    for k in range(n):
        state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        noise[k] = ((state >> 40) % 2001 - 1000) / 1000.0
    s = 0.3 * np.sin(i * (0.05 + 1e-5 * (i % 160000))) + 0.02 * noise
    return s.astype(np.float32)


def time_mtmd(path, seconds, threads, reps):
    import llama_cpp
    from llama_cpp import mtmd_cpp as mtmd
    llama_cpp.llama_backend_init()
    cp = mtmd.mtmd_context_params_default()
    cp.use_gpu = False
    cp.n_threads = threads
    cp.print_timings = False
    cp.warmup = False
    ctx = mtmd.mtmd_init_from_file(path.encode(), None, cp)
    if not ctx:
        raise SystemExit("mtmd could not load " + path)
    marker = mtmd.mtmd_default_marker()
    for sec in seconds:
        x = signal(int(sec * 16000))
        buf = (ctypes.c_float * len(x)).from_buffer_copy(x.tobytes())
        mels, encs, n_tok = [], [], 0
        for r in range(reps + 1):
            bitmap = mtmd.mtmd_bitmap_init_from_audio(len(x), buf)
            chunks = mtmd.mtmd_input_chunks_init()
            inp = mtmd.mtmd_input_text()
            inp.text = marker
            inp.text_len = len(marker)
            inp.add_special = False
            inp.parse_special = True
            t0 = time.perf_counter()
            assert mtmd.mtmd_tokenize(ctx, chunks, ctypes.byref(inp), (mtmd.mtmd_bitmap_p_ctypes * 1)(bitmap), 1) == 0
            t1 = time.perf_counter()
            for i in range(mtmd.mtmd_input_chunks_size(chunks)):
                chunk = mtmd.mtmd_input_chunks_get(chunks, i)
                if mtmd.mtmd_input_chunk_get_type(chunk) == mtmd.MTMD_INPUT_CHUNK_TYPE_AUDIO:
                    n_tok += 0 if r else mtmd.mtmd_input_chunk_get_n_tokens(chunk)
                    assert mtmd.mtmd_encode_chunk(ctx, chunk) == 0
            t2 = time.perf_counter()
            if r:  # the first run warms up
                mels.append(t1 - t0)
                encs.append(t2 - t1)
            mtmd.mtmd_input_chunks_free(chunks)
            mtmd.mtmd_bitmap_free(bitmap)
        tag = f"mtmd_{sec:g}s"
        print(f"{tag}_tokens: {n_tok}")
        print(f"{tag}_mel_s: {statistics.median(mels):.4f}")
        print(f"{tag}_encode_s: {statistics.median(encs):.4f}")
        print(f"{tag}_total_s: {statistics.median([a + b for a, b in zip(mels, encs)]):.4f}")
        sys.stdout.flush()
    mtmd.mtmd_free(ctx)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    mk = sub.add_parser("make-model")
    mk.add_argument("out")
    mk.add_argument("--type", choices=["f16", "q8_0"], default="f16")
    tm = sub.add_parser("time")
    tm.add_argument("model")
    tm.add_argument("--seconds", type=float, nargs="+", default=[10, 60])
    tm.add_argument("--threads", type=int, default=2)
    tm.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    if a.cmd == "make-model":
        make_model(a.out, a.type)
    else:
        time_mtmd(a.model, a.seconds, a.threads, a.reps)


if __name__ == "__main__":
    main()
