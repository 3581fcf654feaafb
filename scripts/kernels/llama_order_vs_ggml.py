#!/usr/bin/env python3
"""Our Q4_K / Q6_K kernels (lk_matmul_tensor, per ISA) against llama.cpp's own on real Gemma 3 rows, bit for bit:
ggml_gemm/gemv_q4_K_8x8_q8_K on weights repacked here as make_block_q4_Kx8 does (4-token groups + the rest,
decode, a 20-token call through the AVX-512 tile), and ggml_vec_dot_q6_K_q8_K for Q6_K under 8 tokens.
Needs llama-cpp-python (its libggml-cpu.so; an oracle only) and the kernels as a shared library:
  S=Sources/CLeapKernels; clang -O3 -fno-math-errno -shared -fPIC -I$S/include -I$S -o /tmp/liblk.so \
    $(find $S -name '*.c') -lm -lpthread
  python3 scripts/kernels/llama_order_vs_ggml.py [/tmp/liblk.so] [gemma-3-270m-q4_k_m.gguf]"""
import sys
import ctypes, os, numpy as np, gguf, llama_cpp
lk = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else "/tmp/liblk.so")
MODEL = sys.argv[2] if len(sys.argv) > 2 else "models/gemma-3-270m-q4_k_m.gguf"  # from the repository root
gg = ctypes.CDLL(os.path.join(os.path.dirname(llama_cpp.__file__), "lib", "libggml-cpu.so"))
gg.ggml_cpu_init()
lk.lk_quantize_row.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
lk.lk_row_bytes.restype = ctypes.c_size_t; lk.lk_row_bytes.argtypes = [ctypes.c_int, ctypes.c_int64]
lk.lk_matmul_tensor.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int64, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]
for f in ["ggml_gemv_q4_K_8x8_q8_K", "ggml_gemm_q4_K_8x8_q8_K"]:
    getattr(gg, f).argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
gg.ggml_quantize_mat_q8_K_4x8.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]

def repack_q4K(raw, rows, nb):  # raw [rows, nb*144] -> [rows/8, nb] of block_q4_Kx8 (8 d, 8 dmin, 96 scales, 1024 qs)
    out = bytearray()
    for g in range(rows // 8):
        for b in range(nb):
            blk = [raw[g * 8 + i, b * 144:(b + 1) * 144] for i in range(8)]
            d = b"".join(bytes(x[0:2]) for x in blk); dmin = b"".join(bytes(x[2:4]) for x in blk)
            qs = bytearray(1024)
            for i in range(128):
                src, off = i % 8, (i // 8) * 8
                qs[i * 8:i * 8 + 8] = bytes(blk[src][16 + off:16 + off + 8])
            sc = bytearray(96)
            scl = [x[4:16] for x in blk]
            for i in range(4):
                s = [scl[j][i] & 63 for j in range(8)]; m = [scl[j][i + 4] & 63 for j in range(8)]
                def put(base, s, m):
                    for k in range(4): sc[base + k] = ((s[k] & 63) + ((s[k + 4] & 48) << 2)) & 255
                    for k in range(4): sc[base + 4 + k] = ((m[k] & 63) + ((m[k + 4] & 48) << 2)) & 255
                    for k in range(4): sc[base + 8 + k] = ((s[k + 4] & 15) + ((m[k + 4] & 15) << 4)) & 255
                put(i * 12, s, m)
                s2 = [((scl[j][i] & 192) >> 2) | (scl[j][i + 8] & 15) for j in range(8)]
                m2 = [((scl[j][i + 4] & 192) >> 2) | ((scl[j][i + 8] & 240) >> 4) for j in range(8)]
                put(i * 12 + 48, s2, m2)
            out += d + dmin + bytes(sc) + bytes(qs)
    return np.frombuffer(bytes(out), np.uint8).copy()

rng = np.random.default_rng(3)
R = gguf.GGUFReader(MODEL)
done = 0
for t in R.tensors:
    if int(t.tensor_type) != 12 or done >= 2: continue
    done += 1
    cols = int(t.shape[0]); rows = 64; nb = cols // 256
    raw = np.ascontiguousarray(np.asarray(t.data).view(np.uint8).reshape(int(t.shape[1]), -1)[:rows])
    rep = repack_q4K(raw, rows, nb)
    T = 11
    x = (rng.standard_normal((T, cols)) * rng.uniform(0.1, 5, size=(T, cols))).astype(np.float32)
    rb = lk.lk_row_bytes(15, cols)
    xq = np.zeros((T, rb), np.uint8)
    for i in range(T): lk.lk_quantize_row(15, x[i].ctypes.data, xq[i].ctypes.data, cols)
    # llama.cpp: gemm on tokens 0..7 (quantize_mat 4x8 per group), gemv on 8..10
    ref = np.zeros((T, rows), np.float32)
    n4 = T - T % 4
    for g in range(0, n4, 4):
        q4 = np.zeros(4 * rb, np.uint8)
        gg.ggml_quantize_mat_q8_K_4x8(np.ascontiguousarray(x[g:g + 4]).ctypes.data, q4.ctypes.data, cols)
        gg.ggml_gemm_q4_K_8x8_q8_K(cols, ref[g:].ctypes.data, rows, rep.ctypes.data, q4.ctypes.data, 4, rows)
    for i in range(n4, T):
        out = np.zeros(rows, np.float32)
        gg.ggml_gemv_q4_K_8x8_q8_K(cols, out.ctypes.data, rows, rep.ctypes.data, xq[i].ctypes.data, 1, rows)
        ref[i] = out
    res = []
    for isa, nm in [(0, "scalar"), (1, "avx2"), (2, "avx512")]:
        lk.lk_set_thread_isa(isa)
        y = np.zeros((T, rows), np.float32)
        lk.lk_matmul_tensor(12, 1, raw.ctypes.data, raw.shape[1], cols, xq.ctypes.data, rb, T, y.ctypes.data, rows, 0, rows)
        y1 = np.zeros(rows, np.float32)
        lk.lk_matmul_tensor(12, 1, raw.ctypes.data, raw.shape[1], cols, xq[10].ctypes.data, rb, 1, y1.ctypes.data, rows, 0, rows)
        y21 = np.zeros((21, rows), np.float32)
        x21 = np.concatenate([xq, xq[:10]]); 
        lk.lk_matmul_tensor(12, 1, raw.ctypes.data, raw.shape[1], cols, x21.ctypes.data, rb, 20, y21.ctypes.data, rows, 0, rows)
        res.append(f"{nm}: gemm-tokens {(y[:n4]==ref[:n4]).mean():.3f} gemv-tokens {(y[n4:]==ref[n4:]).mean():.3f} decode {(y1==ref[10]).mean():.3f} 20-tok tile(first 8) {(y21[:8]==ref[:8]).mean():.3f}")
    print(t.name, cols, " | ".join(res))

# Q6_K under 8 tokens: ggml_vec_dot_q6_K_q8_K's order
fn = gg.ggml_vec_dot_q6_K_q8_K
fn.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
for t in R.tensors:
    if int(t.tensor_type) != 14: continue
    cols = int(t.shape[0]); rows = 64; T = 5; rb = lk.lk_row_bytes(15, cols)
    raw = np.ascontiguousarray(np.asarray(t.data).view(np.uint8).reshape(int(t.shape[1]), -1)[:rows])
    x = (rng.standard_normal((T, cols)) * rng.uniform(0.1, 5, size=(T, cols))).astype(np.float32)
    xq = np.zeros((T, rb), np.uint8)
    for i in range(T): lk.lk_quantize_row(15, x[i].ctypes.data, xq[i].ctypes.data, cols)
    ref = np.zeros((T, rows), np.float32); s = ctypes.c_float()
    for i in range(T):
        for r in range(rows):
            fn(cols, ctypes.byref(s), 0, raw[r].ctypes.data, 0, xq[i].ctypes.data, 0, 1); ref[i, r] = s.value
    res = []
    for isa, nm in [(1, "avx2"), (2, "avx512")]:
        lk.lk_set_thread_isa(isa); y = np.zeros((T, rows), np.float32)
        lk.lk_matmul_tensor(14, 0, raw.ctypes.data, raw.shape[1], cols, xq.ctypes.data, rb, T, y.ctypes.data, rows, 0, rows)
        res.append(f"{nm}: {(y == ref).mean():.3f}")
    print(t.name, "Q6_K 5 tokens vs ggml_vec_dot:", " | ".join(res))
    break
