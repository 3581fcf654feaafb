#!/usr/bin/env python3
"""Random-weight GGUF files of LFM2.5-Audio's real shapes for `leap-bench speech` (never committed):

  backbone-q4_0.gguf   lfm2, LFM2-1.2B shape: hidden 2048, ff 8192, 32 heads / 8 KV heads, 16 layers with
                       attention at 2, 5, 8, 10, 12, 14, vocab 65536, vocabulary `none`
  vocoder-q4_0.gguf    Liquid's vocoder layout: depthformer 6 x 1024 (ff 2816), depth_linear 2048 -> 8 x 1024,
                       8 codebooks of 2049, feedback table 8 x 2049 x 2048, emb.emb 8 x 2048 x 512
  tokenizer-q4_0.gguf  the detokenizer: lfm2 8 x 512, layers conv,conv,swa,conv,swa,conv,swa,conv, 16 heads,
                       8 KV heads, ff 2304, sliding window 30, dense_2 512 -> 1282, vocab 65536

2-D weights are Q4_0 (gguf-py's quantizer), 1-D tensors and conv taps F32. Usage:
  python3 scripts/make_speech_bench_files.py OUT_DIR      (needs numpy and gguf: pip install gguf)
  python3 scripts/make_speech_bench_files.py OUT_DIR --vocab-from MODEL.gguf

--vocab-from gives the backbone the vocabulary, special tokens and chat template of another LFM2 GGUF (its
vocab size replaces 65536; e.g. the speech test fixture's) so that the set runs end to end through the
chat API and leap-server, which tokenize text; without it only `leap-bench speech` can use the files.
"""
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as QT

rng = np.random.default_rng(2026)


def mat(rows, cols, scale=None):
    return (rng.standard_normal((rows, cols), dtype=np.float32) * (scale or cols ** -0.5)).astype(np.float32)


def vec(n, around=1.0, spread=0.1):
    return (around + spread * rng.standard_normal(n)).astype(np.float32)


def add(w, name, a, qtype=QT.Q4_0):
    if a.ndim == 1 or qtype == QT.F32:
        w.add_tensor(name, a.astype(np.float32))
    else:
        w.add_tensor(name, gguf.quants.quantize(a, qtype), raw_dtype=qtype)


def read_vocabulary(path):
    """The tokenizer.* fields of a GGUF as (key, value, gguf value type) for GGUFWriter.add_key_value."""
    r = gguf.GGUFReader(path)
    out = []
    for key, f in r.fields.items():
        if not key.startswith("tokenizer."):
            continue
        kind = f.types[0]
        if kind == gguf.GGUFValueType.ARRAY:
            sub = f.types[-1]
            items = [f.parts[i] for i in f.data]
            value = [bytes(x).decode("utf-8") if sub == gguf.GGUFValueType.STRING else x.tolist()[0] for x in items]
            out.append((key, value, kind, sub))
        else:
            v = f.parts[f.data[0]]
            value = bytes(v).decode("utf-8") if kind == gguf.GGUFValueType.STRING else v.tolist()[0]
            out.append((key, value, kind, None))
    n_vocab = len(next(v for k, v, _, _ in out if k == "tokenizer.ggml.tokens"))
    return out, n_vocab


def write_lfm2(path, *, n_embd, n_ff, n_head, n_kv, attention, n_layer, vocab, swa=0, dense_out=0, vocabulary=None):
    w = gguf.GGUFWriter(path, "lfm2")
    w.add_name(os.path.basename(path))
    w.add_block_count(n_layer)
    w.add_context_length(128000)
    w.add_embedding_length(n_embd)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv([n_kv if i in attention else 0 for i in range(n_layer)])
    w.add_rope_freq_base(1000000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_shortconv_l_cache(3)
    w.add_vocab_size(vocab)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_0)
    if swa:
        w.add_sliding_window(swa)
    if dense_out:
        w.add_embedding_length_out(dense_out)
    if vocabulary is None:
        w.add_tokenizer_model("none")
    for key, value, kind, sub in vocabulary or []:
        w.add_key_value(key, value, kind, sub_type=sub)
    add(w, "token_embd.weight", mat(vocab, n_embd))
    add(w, "token_embd_norm.weight", vec(n_embd))
    hd = n_embd // n_head
    for i in range(n_layer):
        p = f"blk.{i}."
        add(w, p + "attn_norm.weight", vec(n_embd))
        add(w, p + "ffn_norm.weight", vec(n_embd))
        add(w, p + "ffn_gate.weight", mat(n_ff, n_embd))
        add(w, p + "ffn_up.weight", mat(n_ff, n_embd))
        add(w, p + "ffn_down.weight", mat(n_embd, n_ff))
        if i in attention:
            add(w, p + "attn_q.weight", mat(n_embd, n_embd))
            add(w, p + "attn_k.weight", mat(n_kv * hd, n_embd))
            add(w, p + "attn_v.weight", mat(n_kv * hd, n_embd))
            add(w, p + "attn_output.weight", mat(n_embd, n_embd))
            add(w, p + "attn_q_norm.weight", vec(hd))
            add(w, p + "attn_k_norm.weight", vec(hd))
        else:
            add(w, p + "shortconv.conv.weight", mat(n_embd, 3, 0.5), QT.F32)
            add(w, p + "shortconv.in_proj.weight", mat(3 * n_embd, n_embd))
            add(w, p + "shortconv.out_proj.weight", mat(n_embd, n_embd))
    if dense_out:
        add(w, "dense_2.weight", mat(dense_out, n_embd))
        add(w, "dense_2.bias", np.concatenate([vec(dense_out // 2, -2.0, 0.3), vec(dense_out // 2, 0.0, 1.5)]))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_vocoder(path, *, backbone=2048, dim=1024, layers=6, ff=2816, detok=512):
    w = gguf.GGUFWriter(path=None, arch="this model cannot be used as LLM, use it via --model-vocoder in TTS examples")
    w.add_uint32("depthformer_n_layer", layers)
    w.add_uint32("depthformer_n_embd", dim)
    hd = dim // 32
    for i in range(layers):
        p = f"depthformer.layers.{i}."
        add(w, p + "operator_norm.weight", vec(dim))
        add(w, p + "operator.qkv_proj.weight", mat(dim + 2 * 8 * hd, dim))
        add(w, p + "operator.attention.q_layernorm.weight", vec(hd))
        add(w, p + "operator.attention.k_layernorm.weight", vec(hd))
        add(w, p + "operator.out_proj.weight", mat(dim, dim))
        add(w, p + "ffn_norm.weight", vec(dim))
        add(w, p + "feed_forward.w1.weight", mat(ff, dim))
        add(w, p + "feed_forward.w2.weight", mat(dim, ff))
        add(w, p + "feed_forward.w3.weight", mat(ff, dim))
    add(w, "depth_linear.weight", mat(8 * dim, backbone))
    add(w, "depth_linear.bias", vec(8 * dim, 0.0))
    for i in range(8):
        p = f"depth_embeddings.{i}."
        add(w, p + "embedding_norm.weight", vec(dim))
        add(w, p + "embedding.weight", mat(2049, dim))
        add(w, p + "to_logits.weight", mat(2049, dim))
    add(w, "audio_embedding.embedding_norm.weight", vec(backbone))
    add(w, "audio_embedding.embedding.weight", mat(8 * 2049, backbone, 0.02))
    add(w, "audio_embedding.to_logits.weight", mat(8 * 2049, backbone))
    add(w, "emb.emb.weight", mat(8 * 2048, detok, 1.0))
    add(w, "istft.window", (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(1280) / 1280)).astype(np.float32))
    w.write_header_to_file(path=path)
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    args = sys.argv[1:]
    vocabulary, vocab = None, 65536
    if "--vocab-from" in args:
        i = args.index("--vocab-from")
        vocabulary, vocab = read_vocabulary(args[i + 1])
        del args[i:i + 2]
    out = args[0] if args else "/tmp/leap-speech-bench"
    os.makedirs(out, exist_ok=True)
    write_vocoder(os.path.join(out, "vocoder-q4_0.gguf"))
    write_lfm2(os.path.join(out, "tokenizer-q4_0.gguf"), n_embd=512, n_ff=2304, n_head=16, n_kv=8,
               attention={2, 4, 6}, n_layer=8, vocab=65536, swa=30, dense_out=1282)
    write_lfm2(os.path.join(out, "backbone-q4_0.gguf"), n_embd=2048, n_ff=8192, n_head=32, n_kv=8,
               attention={2, 5, 8, 10, 12, 14}, n_layer=16, vocab=vocab, vocabulary=vocabulary)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
