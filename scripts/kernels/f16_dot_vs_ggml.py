#!/usr/bin/env python3
"""lk_matvec_f16_ggml (one-token attention) on the AVX2 and AVX-512 paths against llama.cpp's own
ggml_vec_dot_f16 (libggml-cpu.so of this machine's AVX-512 build), bit for bit. Rows: random, real Gemma 3 weights rounded to F16, softmax-like probabilities (P·V);
n = 64/256/512 and non-multiples; padded rows (zeros to n_padded, NaN garbage after n in our copy: not read).
Needs llama-cpp-python (an oracle only) and the kernels as a shared library:
  S=Sources/CLeapKernels; clang -O3 -fno-math-errno -shared -fPIC -I$S/include -I$S -o /tmp/liblk.so \
    $(find $S -name '*.c') -lm -lpthread
  python3 scripts/kernels/f16_dot_vs_ggml.py [/tmp/liblk.so] [gemma-3-270m-q4_k_m.gguf]"""
import sys
import ctypes, os, numpy as np, gguf, llama_cpp
lk = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else "/tmp/liblk.so")
MODEL = sys.argv[2] if len(sys.argv) > 2 else "models/gemma-3-270m-q4_k_m.gguf"  # from the repository root
gg = ctypes.CDLL(os.path.join(os.path.dirname(llama_cpp.__file__), "lib", "libggml-cpu.so"))
gg.ggml_cpu_init()
gg.ggml_vec_dot_f16.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                                ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
lk.lk_matvec_f16_ggml.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
                                  ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
lk.lk_set_isa.argtypes = [ctypes.c_int]
lk.lk_dequantize_row.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
AVX2, AVX512 = 1, 2
f32 = np.float32


def ggml_dot(w, x):  # w, x: float16 arrays of the same length
    s = ctypes.c_float()
    w = np.ascontiguousarray(w); x = np.ascontiguousarray(x)
    gg.ggml_vec_dot_f16(len(w), ctypes.addressof(s), 0, w.ctypes.data, 0, x.ctypes.data, 0, 1)
    return np.float32(s.value)


def ours(isa, w, x, n_padded, rows=1):
    """w: [rows, n] float16 (each row copied into a buffer of n_padded + 8 with NaN after n), x: [n] float16."""
    n = w.shape[1]
    buf = np.full((rows, n_padded + 8), np.float16(np.nan))
    buf[:, :n] = w
    xf = x.astype(f32)
    y = np.zeros(rows, f32)
    lk.lk_set_isa(isa)
    lk.lk_matvec_f16_ggml(buf.ctypes.data, buf.strides[0], n, n_padded, xf.ctypes.data, y.ctypes.data, 0, rows)
    return y


rng = np.random.default_rng(11)
R = gguf.GGUFReader(MODEL)
real = []
for t in R.tensors:
    if t.name.endswith("attn_k.weight") or t.name.endswith("attn_v.weight"):
        cols = int(t.shape[0]); raw = np.asarray(t.data).view(np.uint8).reshape(int(t.shape[1]), -1)
        for r in range(0, 16):
            row = np.zeros(cols, f32)
            lk.lk_dequantize_row(int(t.tensor_type), raw[r].ctypes.data, row.ctypes.data, cols)
            real.append(row * 20)
    if len(real) >= 64: break

checked = bad = 0
for n in [1, 7, 16, 31, 32, 33, 63, 64, 65, 100, 127, 128, 200, 255, 256, 300, 511, 512, 513, 640, 1000, 1024]:
    for kind in ["random", "real", "probs"]:
        rows = 8
        if kind == "random":
            w = (rng.standard_normal((rows, n)) * rng.uniform(0.01, 8, (rows, n))).astype(np.float16)
            x = (rng.standard_normal(n) * 3).astype(np.float16)
        elif kind == "real":
            w = np.stack([np.resize(real[(i * 7 + n) % len(real)], n) for i in range(rows)]).astype(np.float16)
            x = np.resize(real[n % len(real)], n).astype(np.float16)
        else:  # P·V: value-cache rows and softmax probabilities (x)
            w = (rng.standard_normal((rows, n)) * 2).astype(np.float16)
            e = np.exp(rng.standard_normal(n) * 4); x = (e / e.sum()).astype(np.float16)
        for pad in sorted({n, (n + 15) // 16 * 16, (n + 63) // 64 * 64, (n + 255) // 256 * 256}):
            wz = np.zeros((rows, pad), np.float16); wz[:, :n] = w
            xz = np.zeros(pad, np.float16); xz[:n] = x
            for isa in [AVX512, AVX2]:
                got = ours(isa, w, xz[:n], pad, rows)
                for r in range(rows):
                    want = ggml_dot(wz[r], xz)
                    checked += 1
                    if got[r].view(np.uint32) != want.view(np.uint32):
                        bad += 1
                        if bad <= 10:
                            print(f"DIFF isa={isa} n={n} pad={pad} {kind} row {r}: {got[r]!r} vs {want!r}")
print(f"{checked} dots checked, {bad} differ")
sys.exit(1 if bad else 0)
