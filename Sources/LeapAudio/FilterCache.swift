// A small process-wide cache of designed polyphase filters, keyed by everything the design depends on.
//
// Designing a polyphase stage costs little for common rates (tens of phases) but up to a few ms for odd
// ones (44056 Hz -> 16 kHz has 4000 phases), which is a third of converting 60 s of audio. Callers that
// convert many inputs at the same rates (every file of a data set, every turn of a conversation) pay it
// once. Designs are immutable, so sharing them between resamplers and threads is safe.
import Glibc

/// An immutable polyphase design: the phase table and, when it is small enough, its 16-output block form.
final class PolyphaseDesign: @unchecked Sendable {
    let table: PolyphaseTable
    let block: BlockTable?
    let numerator: Int          // M
    let denominator: Int        // L
    let interpolatedRows: Int   // 0: exact table

    init(table: PolyphaseTable, numerator m: Int, denominator l: Int, interpolatedRows: Int) {
        self.table = table
        self.numerator = m
        self.denominator = l
        self.interpolatedRows = interpolatedRows
        self.block = interpolatedRows == 0 ? BlockTable(table: table, numerator: m, denominator: l) : nil
    }

    /// Floats held (what the cache budgets).
    var size: Int { table.rows * table.taps + (block.map { $0.patterns * $0.window * $0.group } ?? 0) }
}

struct PolyphaseDesignKey: Hashable {
    let numerator: Int, denominator: Int, halfLength: Int
    let cutoffBits: UInt64, betaBits: UInt64
}

/// Least-recently-used cache, bounded in entries and in floats held.
final class PolyphaseDesignCache: @unchecked Sendable {
    static let shared = PolyphaseDesignCache()
    static let maxEntries = 8
    static let maxFloats = 1 << 22  // 16 MiB

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var entries: [(key: PolyphaseDesignKey, design: PolyphaseDesign)] = []  // most recent last

    private init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    /// The cached design for `key`, or `make()`'s (designed outside the lock, then remembered).
    func design(_ key: PolyphaseDesignKey, make: () -> PolyphaseDesign) -> PolyphaseDesign {
        if let hit = locked({ () -> PolyphaseDesign? in
            guard let i = entries.firstIndex(where: { $0.key == key }) else { return nil }
            let entry = entries.remove(at: i)
            entries.append(entry)
            return entry.design
        }) {
            return hit
        }
        let made = make()
        guard made.size <= PolyphaseDesignCache.maxFloats else { return made }
        locked {
            if entries.contains(where: { $0.key == key }) { return }
            entries.append((key, made))
            var total = entries.reduce(0) { $0 + $1.design.size }
            while entries.count > PolyphaseDesignCache.maxEntries || total > PolyphaseDesignCache.maxFloats {
                total -= entries.removeFirst().design.size
            }
        }
        return made
    }

    private func locked<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }
}
