import Glibc

// An open-addressing hash table from byte strings to Int32, looked up by buffer so that the hot loops never
// allocate. Keys are copied into one contiguous arena.
struct BytesTable {
    private var arena: [UInt8] = [0]  // never empty, so its base address always exists
    private var keyStart: [Int] = []  // [nKeys] offset of each key in `arena`
    private var keyLength: [Int] = []  // [nKeys]
    private var values: [Int32] = []  // [nKeys]
    private var slots: [Int32]  // [capacity] key index + 1, 0 = empty
    private var mask: Int

    init(capacity: Int = 16) {
        var c = 16
        while c < capacity * 2 { c <<= 1 }
        slots = [Int32](repeating: 0, count: c)
        mask = c - 1
    }

    var count: Int { values.count }

    @inline(__always)
    static func hash(_ key: UnsafeBufferPointer<UInt8>) -> UInt64 {
        // FNV-1a with a final avalanche; keys here are short (tokens and words).
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in key { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        h ^= h >> 29
        h = h &* 0xbf58_476d_1ce4_e5b9
        return h ^ (h >> 32)
    }

    @inline(__always)
    func find(_ key: UnsafeBufferPointer<UInt8>) -> Int32? {
        var i = Int(truncatingIfNeeded: BytesTable.hash(key)) & mask
        let n = key.count
        return slots.withUnsafeBufferPointer { s in
            arena.withUnsafeBufferPointer { a in
                while true {
                    let k = Int(s[i]) - 1
                    if k < 0 { return nil }
                    if keyLength[k] == n {
                        if n == 0 { return values[k] }
                        if let base = a.baseAddress, let kp = key.baseAddress,
                            memcmp(base + keyStart[k], kp, n) == 0
                        {
                            return values[k]
                        }
                    }
                    i = (i + 1) & mask
                }
            }
        }
    }

    func find(_ key: [UInt8]) -> Int32? {
        key.withUnsafeBufferPointer { find($0) }
    }

    /// Inserts `key` → `value` unless the key is present; returns the stored value.
    @discardableResult
    mutating func insertIfAbsent(_ key: UnsafeBufferPointer<UInt8>, _ value: Int32) -> Int32 {
        if let v = find(key) { return v }
        if (values.count + 1) * 2 > slots.count { grow() }
        keyStart.append(arena.count)
        keyLength.append(key.count)
        arena.append(contentsOf: key)
        values.append(value)
        place(values.count - 1, hash: BytesTable.hash(key))
        return value
    }

    @discardableResult
    mutating func insertIfAbsent(_ key: [UInt8], _ value: Int32) -> Int32 {
        key.withUnsafeBufferPointer { insertIfAbsent($0, value) }
    }

    private mutating func place(_ k: Int, hash: UInt64) {
        var i = Int(truncatingIfNeeded: hash) & mask
        while slots[i] != 0 { i = (i + 1) & mask }
        slots[i] = Int32(k + 1)
    }

    private mutating func grow() {
        let c = slots.count * 2
        slots = [Int32](repeating: 0, count: c)
        mask = c - 1
        for k in 0..<values.count {
            let h = arena.withUnsafeBufferPointer { a in
                BytesTable.hash(UnsafeBufferPointer(rebasing: a[keyStart[k]..<(keyStart[k] + keyLength[k])]))
            }
            place(k, hash: h)
        }
    }
}

/// An open-addressing hash table from a pair of Int32 symbol ids to an Int64 payload (BPE merges).
struct PairTable {
    private var keys: [UInt64]  // [capacity] (left << 32 | right) + 1, 0 = empty
    private var payloads: [Int64]  // [capacity]
    private var mask: Int
    private(set) var count = 0

    init(capacity: Int) {
        var c = 16
        while c < capacity * 2 { c <<= 1 }
        keys = [UInt64](repeating: 0, count: c)
        payloads = [Int64](repeating: 0, count: c)
        mask = c - 1
    }

    @inline(__always)
    private static func slot(_ key: UInt64) -> Int {
        Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> 20)
    }

    @inline(__always)
    func find(_ left: Int32, _ right: Int32) -> Int64? {
        let key = (UInt64(UInt32(bitPattern: left)) << 32 | UInt64(UInt32(bitPattern: right))) &+ 1
        var i = PairTable.slot(key) & mask
        return keys.withUnsafeBufferPointer { k in
            while true {
                let v = k[i]
                if v == key { return payloads[i] }
                if v == 0 { return nil }
                i = (i + 1) & mask
            }
        }
    }

    /// Inserts unless present (the first merge of a pair wins, like llama.cpp's `emplace`).
    mutating func insertIfAbsent(_ left: Int32, _ right: Int32, _ payload: Int64) {
        if find(left, right) != nil { return }
        if (count + 1) * 2 > keys.count { grow() }
        let key = (UInt64(UInt32(bitPattern: left)) << 32 | UInt64(UInt32(bitPattern: right))) &+ 1
        place(key, payload)
        count += 1
    }

    private mutating func place(_ key: UInt64, _ payload: Int64) {
        var i = PairTable.slot(key) & mask
        while keys[i] != 0 { i = (i + 1) & mask }
        keys[i] = key
        payloads[i] = payload
    }

    private mutating func grow() {
        let oldKeys = keys
        let oldPayloads = payloads
        let c = keys.count * 2
        keys = [UInt64](repeating: 0, count: c)
        payloads = [Int64](repeating: 0, count: c)
        mask = c - 1
        for (i, k) in oldKeys.enumerated() where k != 0 { place(k, oldPayloads[i]) }
    }
}
