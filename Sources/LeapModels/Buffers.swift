// Page-aligned zeroed buffers from anonymous mmap: large caches cost no RSS until touched, allocation
// failure is a thrown error (never a trap), and freeing returns the memory to the OS.
import Glibc
import LeapCore

final class RawBuffer {
    let base: UnsafeMutableRawPointer
    let byteCount: Int

    init(bytes: Int, what: String) throws {
        let n = max(bytes, 1)
        guard let p = mmap(nil, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), p != MAP_FAILED else {
            throw LeapError(.outOfMemory, "could not allocate \(bytes) bytes for \(what)")
        }
        base = p
        byteCount = n
    }

    /// `count` elements of T with overflow-checked size.
    convenience init<T>(count: Int, of: T.Type, what: String) throws {
        let (bytes, o) = max(count, 0).multipliedReportingOverflow(by: MemoryLayout<T>.stride)
        guard !o else { throw LeapError(.outOfMemory, "\(what): \(count) elements overflow the address space") }
        try self.init(bytes: bytes, what: what)
    }

    deinit { munmap(base, byteCount) }

    func floats() -> UnsafeMutablePointer<Float> { base.assumingMemoryBound(to: Float.self) }
    func halves() -> UnsafeMutablePointer<UInt16> { base.assumingMemoryBound(to: UInt16.self) }
}

/// Overflow-checked product for sizes derived from metadata and options.
func checkedSize(_ factors: Int..., what: String) throws -> Int {
    var r = 1
    for f in factors {
        guard f >= 0 else { throw LeapError(.invalidArgument, "\(what): negative size \(f)") }
        let (p, o) = r.multipliedReportingOverflow(by: f)
        guard !o, p <= (1 << 46) else { throw LeapError(.outOfMemory, "\(what): size \(factors) is too large") }
        r = p
    }
    return r
}
