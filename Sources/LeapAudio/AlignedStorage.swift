// Float storage on 64-byte boundaries for the resampler's tables and buffers.
//
// The C kernels stream these with 32- and 64-byte vector loads; from a plain allocation (16-byte aligned)
// half or all of those straddle two cache lines, and which ones depends on the heap layout, so speed
// would vary from build to build (`leap-bench audio`).

/// Uninitialized storage for `count` floats, 64-byte aligned; release with `deallocate()`.
func allocateAlignedFloats(_ count: Int) -> UnsafeMutablePointer<Float> {
    UnsafeMutableRawPointer.allocate(byteCount: max(1, count) * MemoryLayout<Float>.stride, alignment: 64)
        .bindMemory(to: Float.self, capacity: max(1, count))
}
