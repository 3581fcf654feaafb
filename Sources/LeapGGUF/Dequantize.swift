// Dequantization of every supported ggml type, written once: the C kernels' scalar reference
// (CLeapKernels generic/scalar.c, reached through lk_dequantize_row, which every kernel table dequantizes
// with). It follows ggml's block layouts (ggml-quants.c `dequantize_row_*`) and is bit-exact with ggml and
// gguf-py: each output is computed with the same float operations in the same order (e.g. Q4_K:
// `(d·sc)·q − (dmin·m)`), with no FMA contraction. LeapGGUF depends on the C target (a leaf) rather than the
// reverse so that the reader, the kernels and their tests share one definition; the module graph stays one-way.
import CLeapKernels

/// Dequantizes `count` elements of `type` at `src` into `dst`.
/// `count` must be a multiple of `type.blockSize` (callers validate shapes; a partial trailing block is
/// left untouched).
package func dequantize(type: GGMLType, src: UnsafeRawPointer, count: Int, into dst: UnsafeMutablePointer<Float>) {
    let n = count / type.blockSize * type.blockSize
    if type == .f16 {
        // one value at a time through the scalar conversion: the table's F16 row converter may be a SIMD
        // instruction that quiets signalling NaNs, and a reader gives back every bit pattern as stored
        for i in 0..<n { dst[i] = halfToFloat(UInt16(littleEndian: src.loadUnaligned(fromByteOffset: 2 * i, as: UInt16.self))) }
    } else {
        lk_dequantize_row(Int32(type.rawValue), src, dst, Int64(n))
    }
}

/// IEEE binary16 bits → Float, exact for every input (subnormals, infinities, NaN payloads).
package func halfToFloat(_ h: UInt16) -> Float { lk_f16_to_f32(h) }
