// Ops: float element-wise ops, normalisation, RoPE and softmax (ggml semantics), F16 conversion.
import CLeapKernels

/// RoPE pairing: `.normal` rotates adjacent pairs (x[2i], x[2i+1]) (ggml mode 0, llama/SmolLM2 GGUFs);
/// `.neox` rotates halves (x[i], x[i + nRot/2]) (ggml mode 2, LFM2 and Gemma 3).
package enum RopeMode: Sendable {
    case normal, neox
}

extension Kernels {
    /// y = x / sqrt(mean(x²) + eps) ⊙ weight, for each of `nRows` rows. y may alias x.
    package static func rmsNorm(
        _ x: UnsafePointer<Float>, // [nRows, n]
        weight: UnsafePointer<Float>?, // [n] (nil = no scale)
        y: UnsafeMutablePointer<Float>, // [nRows, n]
        n: Int, nRows: Int = 1, eps: Float
    ) {
        for r in 0..<nRows { lk_rms_norm(x + r * n, weight, y + r * n, Int64(n), eps) }
    }

    /// Rotates the first `nRot` dims of every head in place; token t has position `positions[t]`.
    /// θ_i = pos · freqScale · base^(−2i/nRot), i < nRot/2; dims ≥ nRot are left unchanged.
    package static func rope(
        _ x: UnsafeMutablePointer<Float>, // [nTokens, tokenStride], head h of token t at t*tokenStride + h*headDim
        nTokens: Int, nHeads: Int, headDim: Int, tokenStride: Int? = nil,
        nRot: Int, mode: RopeMode, base: Float, freqScale: Float = 1,
        positions: UnsafePointer<Int32> // [nTokens]
    ) {
        let stride = tokenStride ?? nHeads * headDim
        let m: Int32 = mode == .neox ? Int32(LK_ROPE_NEOX) : Int32(LK_ROPE_NORM)
        for t in 0..<nTokens {
            lk_rope(x + t * stride, Int64(nHeads), Int64(headDim), Int64(nRot), m, Float(positions[t]), base, freqScale)
        }
    }

    /// In-place numerically stable softmax of `n` values (a row of all −inf becomes uniform).
    package static func softmax(_ x: UnsafeMutablePointer<Float>, n: Int) { lk_softmax(x, Int64(n)) }

    /// y = x · sigmoid(x). y may alias x.
    package static func silu(_ x: UnsafePointer<Float>, y: UnsafeMutablePointer<Float>, n: Int) {
        lk_silu(x, y, Int64(n))
    }

    /// ggml's GELU, tanh approximation: 0.5x(1 + tanh(√(2/π)(x + 0.044715x³))). y may alias x.
    package static func geluTanh(_ x: UnsafePointer<Float>, y: UnsafeMutablePointer<Float>, n: Int) {
        lk_gelu_tanh(x, y, Int64(n))
    }

    /// y = a ⊙ b (y may alias a or b).
    package static func mul(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, y: UnsafeMutablePointer<Float>, n: Int) {
        lk_mul(a, b, y, Int64(n))
    }

    /// y = a + b (y may alias a or b).
    package static func add(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, y: UnsafeMutablePointer<Float>, n: Int) {
        lk_add(a, b, y, Int64(n))
    }

    /// y = s · x (y may alias x).
    package static func scale(_ x: UnsafePointer<Float>, by s: Float, y: UnsafeMutablePointer<Float>, n: Int) {
        lk_scale(x, s, y, Int64(n))
    }

    /// y += a · v with v in F16 (accumulating softmax(P)·V from an F16 value cache).
    package static func axpyF16(_ a: Float, _ v: UnsafePointer<UInt16>, y: UnsafeMutablePointer<Float>, n: Int) {
        lk_axpy_f16(Int64(n), a, v, y)
    }

    /// Dot product of an F16 row with a float vector (Q·K over an F16 key cache).
    package static func dotF16(_ k: UnsafePointer<UInt16>, _ q: UnsafePointer<Float>, n: Int) -> Float {
        lk_vec_dot(Int32(LK_TYPE_F16), Int64(n), k, q)
    }

    /// F32 → F16 (IEEE binary16 bits, round to nearest even), e.g. when writing the KV cache.
    package static func f32ToF16(_ src: UnsafePointer<Float>, _ dst: UnsafeMutablePointer<UInt16>, n: Int) {
        lk_f32_to_f16_row(src, dst, Int64(n))
    }

    /// F16 bits → F32 (exact).
    package static func f16ToF32(_ src: UnsafePointer<UInt16>, _ dst: UnsafeMutablePointer<Float>, n: Int) {
        lk_f16_to_f32_row(src, dst, Int64(n))
    }
}

/// Which SIMD path the C kernels use (tests and benchmarks compare and force them).
package enum KernelISA: Int32, CaseIterable, Sendable {
    case scalar = 0, avx2 = 1, avx512 = 2, neon = 3, avx512NoVNNI = 4
    /// AVX-512 VNNI with many-token products (16 tokens and more) on the AMX tile unit (x86/amx/prefill.c, INT8
    /// tiles, exact integer sums per block): the best path where the CPU has AMX-INT8 and the kernel grants it.
    case avx512AMX = 5
    /// Every product in llama.cpp's order (its repacked Q4_0 / Q4_K and tiled Q6_K orders, ggml's vec_dot for
    /// the other types, on AVX2 and AVX-512 row kernels), where the CPU has AVX-512: the path on which the
    /// logits of every file are llama.cpp's bit for bit, kept to prove it. Never chosen by default.
    case llamaOrder = 6
    /// AVX2 with AVX-VNNI (VEX vpdpbusd) and no AVX-512: the AVX2 path's kernels with their integer products on
    /// vpdpbusd (the AVX2 files built a second time, x86/avx2/avx_vnni/): the same bits as the AVX2 path, faster prefill.
    case avxVNNI = 7

    package var isAvailable: Bool { lk_isa_available(rawValue) != 0 }
    package var name: String { String(cString: lk_isa_name(rawValue)) }
    package static var best: KernelISA { KernelISA(rawValue: lk_best_isa()) ?? .scalar }
    package static var current: KernelISA { KernelISA(rawValue: lk_get_isa()) ?? .scalar }
    /// The CPU has AVX512-BF16's dot product (VDPBF16PS): the AVX-512 paths then multiply BF16 weights in
    /// llama.cpp's order (x86/avx512/bf16_ggml.c).
    package static var cpuHasBF16DotProduct: Bool { lk_cpu_features() & UInt32(LK_CPU_AVX512BF16) != 0 }
    /// The CPU has AVX512-VNNI (vpdpbusd): the AVX-512 path then has its integer kernels (without it, the
    /// AVX2 path's, with the 512-bit float kernels).
    package static var cpuHasVNNI: Bool { lk_cpu_features() & UInt32(LK_CPU_AVX512VNNI) != 0 }
    /// This path multiplies Q4_K and Q6_K weights in llama.cpp's per-tensor orders (reference/llama_order_kquant.c): the
    /// reference path only. AVX2 and AVX-512 (with or without VNNI) have faster Q4_K / Q5_K / Q6_K kernels of
    /// their own order (x86/avx2/kquant.c, x86/avx512/kquant.c); the scalar and NEON paths keep the row kernels' order.
    package var kQuantsInLlamaOrder: Bool { self == .llamaOrder }
    /// Q4_K, Q5_K and Q6_K on this path have kernels of their own order, not llama.cpp's and not the row
    /// kernels' (x86/avx2/kquant.c, x86/avx512/kquant.c): exact integer sums, fewer float steps.
    package var kQuantsInOwnOrder: Bool { self == .avx2 || self == .avxVNNI || self == .avx512 || self == .avx512NoVNNI || self == .avx512AMX }
    /// The Q8_0 kernels of this path sum in an order of their own at every batch size (x86/avx2/q8_0.c and
    /// x86/avx2/prefill.c's gemm: one exact integer sum per block, one FMA by the scale product), not llama.cpp's
    /// (ggml_vec_dot_q8_0_q8_0's 8 float lanes per block): AVX2 and AVX-512 (the AVX2 row kernels and, with
    /// VNNI, in the 8-row layout, 16-row VNNI tiles of the same bits).
    package var q8_0InOwnOrder: Bool { self == .avx2 || self == .avxVNNI || self == .avx512 || self == .avx512NoVNNI || self == .avx512AMX }

    /// Forces this path process-wide; returns false (and changes nothing) if the CPU lacks it.
    @discardableResult
    package func select() -> Bool { lk_set_isa(rawValue) != 0 }

    /// Runs `body` with this path forced on the current thread only (and in pool runs it starts), so tests
    /// running in parallel do not see each other's choice. Returns nil if the CPU lacks the path.
    package func withThreadSelection<R>(_ body: () throws -> R) rethrows -> R? {
        guard lk_set_thread_isa(rawValue) != 0 else { return nil }
        defer { lk_set_thread_isa(-1) }
        return try body()
    }
}
