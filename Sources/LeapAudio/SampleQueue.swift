// A FIFO of float samples in one growable buffer, the resampler stages' input and output queues.
//
// Stages append at the end (the C kernels write straight into reserved space, which is never zero-filled
// first) and consume from the front. When the end runs out of room the few live samples (a filter's
// history) move down to the start, and the capacity is kept, so a stream in steady state neither allocates
// nor page-faults (a queue of Swift arrays spent a large share of a conversion in copies, zero-fills and
// faults; see BENCHMARKS.md, audio resampling).
import Glibc

final class SampleQueue {
    private var storage: UnsafeMutablePointer<Float>  // `own`, or a borrowed buffer
    private var capacity: Int
    private var head = 0   // first live sample
    private var end = 0    // one past the last live sample
    private var own: UnsafeMutablePointer<Float>
    private var ownCapacity: Int

    init(capacity: Int = 0) {
        ownCapacity = max(capacity, 16)
        own = allocateAlignedFloats(ownCapacity)
        storage = own
        self.capacity = ownCapacity
    }

    deinit { own.deallocate() }

    private var isBorrowing: Bool { storage != own }

    /// Empties the queue and has it write into `external` (`count` samples, not owned) from now on, so
    /// that a result can be produced in place in the caller's array; `endBorrowing` ends it. If more room
    /// is needed the samples move to the queue's own storage (correct, just a copy).
    func borrow(_ external: UnsafeMutableBufferPointer<Float>) {
        guard let base = external.baseAddress, external.count > 0 else { return }
        (storage, capacity, head, end) = (base, external.count, 0, 0)
    }

    /// Stops borrowing. Returns how many samples the borrowed buffer holds from its first element (the
    /// queue is then empty), or nil if they had to move to the queue's own storage (where they stay).
    func endBorrowing() -> Int? {
        guard isBorrowing else { return nil }
        let n = count
        if head != 0 { memmove(storage, storage + head, n * MemoryLayout<Float>.stride) }
        (storage, capacity, head, end) = (own, ownCapacity, 0, 0)
        return n
    }

    var count: Int { end - head }

    /// The live samples; valid until the next call that adds or drops samples.
    var samples: UnsafeMutablePointer<Float> { storage + head }

    /// Room for `n` more samples after the live ones; write them there, then `commit`.
    func reserve(_ n: Int) -> UnsafeMutablePointer<Float> {
        if end + n > capacity {
            let live = count
            if live + n > capacity {
                // Grow geometrically (amortized O(1) per sample).
                let grown = max(live + n, 2 * capacity)
                let bigger = allocateAlignedFloats(grown)
                bigger.update(from: storage + head, count: live)
                own.deallocate()
                (own, ownCapacity, storage, capacity) = (bigger, grown, bigger, grown)
            } else {
                memmove(storage, storage + head, live * MemoryLayout<Float>.stride)
            }
            head = 0
            end = live
        }
        return storage + end
    }

    /// Makes room for `n` live samples in all (growing now rather than by copies later).
    func reserveCapacity(_ n: Int) {
        if n > count { _ = reserve(n - count) }
    }

    /// Makes `n` samples written at `reserve`'s pointer live.
    func commit(_ n: Int) { end += n }

    func append(_ x: UnsafeBufferPointer<Float>) {
        guard let base = x.baseAddress, !x.isEmpty else { return }
        reserve(x.count).update(from: base, count: x.count)
        commit(x.count)
    }

    func appendZeros(_ n: Int) {
        guard n > 0 else { return }
        reserve(n).update(repeating: 0, count: n)
        commit(n)
    }

    /// Consumes the first `n` live samples.
    func drop(_ n: Int) {
        head += min(n, count)
        if head == end { (head, end) = (0, 0) }
    }

    /// Drops the last `n` live samples.
    func dropLast(_ n: Int) { end -= min(n, count) }

    func removeAll() { (head, end) = (0, 0) }
}
