// KVCache: keys and values of the attention layers for `contextSize` positions.
//
// Layout per attention layer (slot), as llama.cpp's non-flash-attention path:
//   K  [contextSize][kvDim]    one row per position (Q·Kᵀ is a matmul with K as the weight)
//   Vᵀ [kvDim][contextSize]    one row per value dimension (P·V is a matmul with Vᵀ as the weight)
// kvDim = n_head_kv · head_dim. F16 by default (what llama.cpp uses, and half the memory); F32 optional.
import CLeapKernels
import LeapCore
import LeapGGUF

package enum KVCacheType: Sendable {
    case f16
    case f32

    var elementBytes: Int { self == .f16 ? 2 : 4 }
    var ggmlType: Int32 { self == .f16 ? Int32(GGMLType.f16.rawValue) : Int32(GGMLType.f32.rawValue) }
}

final class KVCache {
    let type: KVCacheType
    let contextSize: Int
    let kvDims: [Int]           // per slot
    private let kOffsets: [Int] // byte offsets per slot
    private let vOffsets: [Int]
    private let storage: RawBuffer

    init(type: KVCacheType, contextSize: Int, kvDims: [Int]) throws {
        self.type = type
        self.contextSize = contextSize
        self.kvDims = kvDims
        var offset = 0
        var ko: [Int] = [], vo: [Int] = []
        for d in kvDims {
            let bytes = try checkedSize(contextSize, d, type.elementBytes, what: "KV cache")
            ko.append(offset)
            offset += bytes
            vo.append(offset)
            offset += bytes
        }
        kOffsets = ko
        vOffsets = vo
        storage = try RawBuffer(bytes: offset, what: "the KV cache (\(contextSize) positions)")
    }

    var byteCount: Int { storage.byteCount }

    /// K row of position `pos` in `slot` ([kvDim] elements).
    func kRow(_ slot: Int, _ pos: Int) -> UnsafeMutableRawPointer {
        storage.base + kOffsets[slot] + pos * kvDims[slot] * type.elementBytes
    }
    func kRowBytes(_ slot: Int) -> Int { kvDims[slot] * type.elementBytes }

    /// Vᵀ row of value dimension `dim` in `slot` ([contextSize] elements).
    func vRow(_ slot: Int, _ dim: Int) -> UnsafeMutableRawPointer {
        storage.base + vOffsets[slot] + dim * contextSize * type.elementBytes
    }
    var vRowBytes: Int { contextSize * type.elementBytes }

    /// Stores k and v of `n` tokens ([n][kvDim] floats, row stride `stride`) at positions pos0..<pos0+n.
    func store(slot: Int, pos0: Int, n: Int, k: UnsafePointer<Float>, v: UnsafePointer<Float>, stride: Int) {
        let d = kvDims[slot]
        for t in 0..<n {
            let pos = pos0 + t
            let kSrc = k + t * stride
            let vSrc = v + t * stride
            switch type {
            case .f16:
                lk_f32_to_f16_row(kSrc, kRow(slot, pos).assumingMemoryBound(to: UInt16.self), Int64(d))
                let base = storage.base + vOffsets[slot]
                let vt = base.assumingMemoryBound(to: UInt16.self)
                for i in 0..<d { vt[i * contextSize + pos] = lk_f32_to_f16(vSrc[i]) }
            case .f32:
                kRow(slot, pos).assumingMemoryBound(to: Float.self).update(from: kSrc, count: d)
                let vt = (storage.base + vOffsets[slot]).assumingMemoryBound(to: Float.self)
                for i in 0..<d { vt[i * contextSize + pos] = vSrc[i] }
            }
        }
    }
}
