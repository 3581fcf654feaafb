// KernelISA: the SIMD paths of the C kernels, which tests and benchmarks compare and force. The element-wise
// ops, norms, RoPE, softmax and F16 conversions are called as lk_* functions (leap_kernels.h) directly.
import CLeapKernels

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
    /// arm64 levels above ARMv8.0 NEON (arm/): with the dot-product instructions (sdot), and with them and the
    /// int8 matrix multiply (smmla) for many-token products; each a table of its own, chosen from the CPU's
    /// hardware capabilities, with the same bits as the NEON path.
    case neonDotprod = 8, neonI8MM = 9

    /// One of the arm64 paths (NEON, + dotprod, + i8mm), which keep one summation order of their own.
    package var isArm: Bool { self == .neon || self == .neonDotprod || self == .neonI8MM }

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
