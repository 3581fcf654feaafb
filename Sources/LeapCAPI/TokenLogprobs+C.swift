import CLeap
import LeapCore
import LeapRuntime

/// The C form of a `.token` event: the token and its alternatives as `leap_token_logprob`s whose bytes
/// this object owns; valid while it lives (until the next event of the generation).
final class CSampledToken {
    /// Every token's bytes, one after another (the pointers below point into it).
    private let arena: UnsafeMutablePointer<CChar>
    let token: leap_token_logprob
    let top: UnsafeMutablePointer<leap_token_logprob>
    let topCount: Int

    init(_ t: SampledToken) {
        let total = t.bytes.count + t.top.reduce(0) { $0 + $1.bytes.count }
        let arena = UnsafeMutablePointer<CChar>.allocate(capacity: max(1, total))
        let top = UnsafeMutablePointer<leap_token_logprob>.allocate(capacity: max(1, t.top.count))
        var offset = 0
        func place(_ id: Int32, _ bytes: [UInt8], _ logprob: Float) -> leap_token_logprob {
            let start = arena + offset
            bytes.withUnsafeBufferPointer { b in
                if let base = b.baseAddress { UnsafeMutableRawPointer(start).copyMemory(from: base, byteCount: b.count) }
            }
            offset += bytes.count
            return leap_token_logprob(token: id, logprob: logprob, bytes: UnsafePointer(start), n_bytes: bytes.count)
        }
        token = place(t.id, t.bytes, t.logprob)
        for (i, alt) in t.top.enumerated() { (top + i).initialize(to: place(alt.id, alt.bytes, alt.logprob)) }
        self.arena = arena
        self.top = top
        topCount = t.top.count
    }

    deinit {
        arena.deallocate()
        top.deallocate()
    }
}
