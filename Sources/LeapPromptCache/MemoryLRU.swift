// The memory side of the prompt cache: snapshots by key, evicted least recently used first beyond an
// entry cap and a byte cap. Not thread-safe (PromptCache holds its lock around every call).

struct MemoryLRU {
    let maxEntries: Int
    let maxBytes: Int
    private var entries: [String: (snapshot: PromptSnapshot, lastUse: UInt64)] = [:]
    private var tick: UInt64 = 0
    private(set) var bytes = 0

    init(maxEntries: Int, maxBytes: Int) {
        self.maxEntries = maxEntries
        self.maxBytes = maxBytes
    }

    var count: Int { entries.count }

    /// (positions, key) of every entry.
    var keys: [(positions: Int, key: String)] { entries.map { ($0.value.snapshot.state.positions, $0.key) } }

    /// The snapshot of `key`, marked as just used.
    mutating func get(_ key: String) -> PromptSnapshot? {
        guard let e = entries[key] else { return nil }
        tick += 1
        entries[key] = (e.snapshot, tick)
        return e.snapshot
    }

    func contains(_ key: String) -> Bool { entries[key] != nil }

    /// Inserts (or refreshes) `key`, then evicts down to the caps. A snapshot larger than the byte cap is
    /// not kept.
    mutating func put(_ key: String, _ snapshot: PromptSnapshot) {
        let size = snapshot.state.byteCount
        guard maxEntries > 0, size <= maxBytes else { return }
        if let old = entries[key] { bytes -= old.snapshot.state.byteCount }
        tick += 1
        entries[key] = (snapshot, tick)
        bytes += size
        while entries.count > maxEntries || bytes > maxBytes {
            guard let oldest = entries.min(by: { $0.value.lastUse < $1.value.lastUse }) else { break }
            bytes -= oldest.value.snapshot.state.byteCount
            entries[oldest.key] = nil
        }
    }
}
