// PackedMatrices: copies of weight matrices in a layout the kernels of this CPU read faster than the GGUF's
// rows (today Q4_0 in the 8-row layout on AVX2, LK_ROWS8), owned for the model's lifetime. Packing gives
// the same products bit for bit; the mmapped pages of a packed original are given back to the kernel.
import CLeapKernels
import Glibc

package final class PackedMatrices: @unchecked Sendable {
    private var buffers: [UnsafeMutableRawPointer] = []
    /// Bytes held by the packed copies.
    package private(set) var byteCount = 0

    package init() {}

    deinit { for b in buffers { b.deallocate() } }

    /// `w` in the 8-row layout when this thread's kernels prefer it for its type and shape (row count a
    /// multiple of 8, not an expert), else `w` itself. Call it from the thread that will run the model's
    /// kernels' path (any other path still multiplies packed weights correctly, only slower).
    package func packed(_ w: WeightMatrix) -> WeightMatrix {
        let type = Int32(w.type.rawValue)
        guard !w.rows8, !w.isExpert, w.rows % 8 == 0, lk_rows8_preferred(type) != 0 else { return w }
        let dst = UnsafeMutableRawPointer.allocate(byteCount: w.byteCount, alignment: 64)
        guard lk_rows8_pack(type, w.data, w.rowBytes, Int64(w.rows), Int64(w.cols), dst) == 1 else {
            dst.deallocate()
            return w
        }
        buffers.append(dst)
        byteCount += w.byteCount
        PackedMatrices.releasePages(w.data, count: w.byteCount)
        var p = w
        p.data = UnsafeRawPointer(dst)
        p.rows8 = true
        return p
    }

    /// Drops this process's copies of the whole pages in [p, p + count) of a read-only mapping (they are
    /// read back from the file if touched again), so that a packed matrix is not resident twice.
    private static func releasePages(_ p: UnsafeRawPointer, count: Int) {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let start = (Int(bitPattern: p) + page - 1) / page * page
        let end = (Int(bitPattern: p) + count) / page * page
        guard end > start, let base = UnsafeMutableRawPointer(bitPattern: start) else { return }
        _ = madvise(base, end - start, MADV_DONTNEED)
    }
}
