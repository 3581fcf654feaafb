// PackedMatrices: copies of weight matrices in a layout the kernels of this CPU read faster than the GGUF's
// rows (the 8-row layout, LK_ROWS8: Q4_0 and Q8_0 on AVX2, AVX-512 VNNI and arm64 with dotprod or i8mm, Q4_K on
// AVX2 and AVX-VNNI, Q4_K and Q6_K on arm64 with dotprod or i8mm, Q5_K on arm64 with dotprod (not i8mm), with the
// row layout's products bit for bit; Q4_K, Q5_K and Q6_K on AVX-512 VNNI without AMX, with its gemm's products at
// every batch size; Q4_1, Q5_0 and Q5_1 on AVX2 and AVX-512 without VNNI, in an order of their own at every batch
// size), owned for
// the model's lifetime. The original is not touched (a model gives its file's pages back with
// GGUFFile.releasePages).
import CLeapKernels
import LeapGGUF
import Glibc

package final class PackedMatrices: @unchecked Sendable {
    private var buffers: [(UnsafeMutableRawPointer, Int)] = []
    /// Bytes held by the packed copies.
    package private(set) var byteCount = 0

    package init() {}

    deinit { for (p, n) in buffers { munmap(p, n) } }

    /// `w` in the 8-row layout when this thread's kernels prefer it for its type and shape (row count a
    /// multiple of 8, not an expert), else `w` itself. Call it from the thread that will run the model's
    /// kernels' path (any other path still multiplies packed weights correctly, only slower). With `pool` the
    /// copy is made by its threads, each packing (and first touching the pages of) a share of the row groups.
    package func packed(_ w: WeightMatrix, pool: ThreadPool? = nil) -> WeightMatrix {
        let type = Int32(w.type.rawValue)
        guard !w.rows8, !w.isExpert, w.rows % 8 == 0, Self.packs(w.type) else { return w }
        guard let dst = PackedMatrices.allocate(w.byteCount) else { return w }
        // Row groups of 8 are packed independently (group g lies at 8·g rows' bytes in both layouts).
        let groups = w.rows / 8
        let shares = min(groups, 2 * (pool?.threadCount ?? 1))
        var refused = [Int32](repeating: 0, count: shares)
        refused.withUnsafeMutableBufferPointer { buffer in
            let refusedBy = buffer
            let packShare = { (share: Int) in
                let g0 = groups * share / shares, g1 = groups * (share + 1) / shares
                let offset = 8 * g0 * w.rowBytes, count = 8 * (g1 - g0) * w.rowBytes
                PackedMatrices.populate(w.data + offset, count: count)
                let ok = lk_rows8_pack(type, w.data + offset, w.rowBytes, Int64(8 * (g1 - g0)), Int64(w.cols), dst + offset)
                refusedBy[share] = ok == 1 ? 0 : 1
            }
            if let pool {
                pool.exclusive { pool.run(tasks: shares) { share, _ in packShare(share) } }
            } else {
                for share in 0..<shares { packShare(share) }
            }
        }
        guard !refused.contains(1) else {
            munmap(dst, w.byteCount)
            return w
        }
        buffers.append((dst, w.byteCount))
        byteCount += w.byteCount
        var p = w
        p.data = UnsafeRawPointer(dst)
        p.rows8 = true
        return p
    }

    /// True when this thread's path packs matrices of `type` (those of whole groups of 8 rows).
    package static func packs(_ type: GGMLType) -> Bool { lk_rows8_preferred(Int32(type.rawValue)) != 0 }

    /// Maps the source's pages in one call (MADV_POPULATE_READ, Linux 5.14) instead of one fault per page;
    /// a kernel without it refuses and the pages fault in as read.
    private static func populate(_ p: UnsafeRawPointer, count: Int) {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let start = Int(bitPattern: p) / page * page
        guard let base = UnsafeMutableRawPointer(bitPattern: start) else { return }
        _ = madvise(base, Int(bitPattern: p) + count - start, 22 /* MADV_POPULATE_READ */)
    }

    /// Anonymous pages for a packed copy, in huge pages where the kernel has them (fewer faults to fill).
    private static func allocate(_ n: Int) -> UnsafeMutableRawPointer? {
        guard let p = mmap(nil, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), p != MAP_FAILED else { return nil }
        _ = madvise(p, n, MADV_HUGEPAGE)
        return p
    }
}
