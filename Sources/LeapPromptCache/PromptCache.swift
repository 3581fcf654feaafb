// PromptCache: saved context states of prompt prefixes, looked up by the longest prefix of a new prompt;
// a bounded LRU in memory in front of a bounded LRU on disk (DiskStore.swift) that other processes and
// later runs share. Thread-safe: one cache serves every conversation of a model.
//
// `insert` keeps the snapshot in memory at once and queues its disk write on a background thread (the
// caller's first token does not wait for the file); `flush` waits for the queued writes (the model's unload
// does). A snapshot that cannot be used (another model or build, damaged, truncated, foreign) is ignored,
// removed from the disk, counted and reported through `Log.warning`; it is never loaded.
import Glibc
import LeapCore
import LeapModels

/// LEAP's CacheOptions.
package struct PromptCacheOptions: Sendable, Equatable {
    /// The cache's root folder (a folder per model is made inside); required unless `diskDisabled`.
    package var path: String?
    package var enabled = false
    package var maxEntriesDisk = 4096
    package var maxEntriesMemory = 256
    package var maxBytesMemory = 512 << 20
    /// Bytes of snapshots kept per model folder on disk.
    package var maxBytesDisk = 4 << 30
    /// Memory only.
    package var diskDisabled = false

    package init(path: String? = nil, enabled: Bool = false) {
        self.path = path
        self.enabled = enabled
    }

    /// Throws LeapError(.invalidArgument) naming a bad value (checked when the cache is enabled).
    package func validate() throws {
        guard maxEntriesMemory >= 0, maxBytesMemory >= 0, maxBytesDisk >= 0, maxEntriesDisk >= 0 else {
            throw LeapError(.invalidArgument, "cache options must not be negative")
        }
        if !diskDisabled {
            guard let p = path, !p.isEmpty else {
                throw LeapError(.invalidArgument, "the prompt cache needs a path (or disk disabled for a memory-only cache)")
            }
            guard maxEntriesDisk > 0 else { throw LeapError(.invalidArgument, "cache max_entries_disk must be > 0 when the disk cache is on") }
            guard maxBytesDisk > 0 else { throw LeapError(.invalidArgument, "cache max_bytes_disk must be > 0 when the disk cache is on") }
        }
    }
}

/// What the cache did so far (for stats, tests and benchmarks).
package struct PromptCacheCounters: Sendable, Equatable {
    package var memoryHits = 0
    package var diskHits = 0
    package var misses = 0
    /// Snapshots found but not used (see the file comment), and why the last one was not.
    package var ignored = 0
    package var lastIgnoredReason = ""
    package var writes = 0
    package var bytesWritten = 0
    package var writeFailures = 0

    package init() {}
}

package final class PromptCache: @unchecked Sendable {
    package let identity: ModelIdentity
    package let options: PromptCacheOptions
    private let lock = Lock()
    private var memory: MemoryLRU
    private let disk: DiskStore?
    private let writer = BackgroundWriter()
    private let countersBox = CountersBox()

    /// Throws LeapError(.invalidArgument) for bad options, LeapError(.io) when the folder cannot be
    /// created or written.
    package init(options: PromptCacheOptions, identity: ModelIdentity) throws {
        try options.validate()
        self.options = options
        self.identity = identity
        memory = MemoryLRU(maxEntries: options.maxEntriesMemory, maxBytes: options.maxBytesMemory)
        if options.diskDisabled {
            disk = nil
        } else {
            disk = try DiskStore(root: options.path ?? "", folderName: identity.folderName,
                                 maxEntries: options.maxEntriesDisk, maxBytes: options.maxBytesDisk)
        }
    }

    deinit { writer.waitUntilIdle() }

    /// The model's folder (nil for a memory-only cache).
    package var folder: String? { disk?.folder }

    package var counters: PromptCacheCounters { countersBox.get() }

    /// The key of `units` under this cache's identity (file names use it).
    package func key(of units: [PrefixUnit]) -> String {
        PrefixHasher.keys(identity: identity.full, units: units, lengths: [units.count])[units.count] ?? ""
    }

    /// The snapshot of the longest cached prefix of `units` with `minPositions...maxPositions` positions,
    /// for a context of `shape`, or nil.
    package func lookup(_ units: [PrefixUnit], minPositions: Int, maxPositions: Int, shape: ContextStateShape) -> PromptSnapshot? {
        let upper = min(maxPositions, units.count)
        guard minPositions <= upper else { return nil }
        var candidates: [(positions: Int, key: String, onDisk: Bool)] = lock.withLock { memory.keys.map { ($0.positions, $0.key, false) } }
        let onDisk = disk?.list(withStats: false) ?? []
        candidates += onDisk.map { ($0.positions, $0.key, true) }
        candidates = candidates.filter { $0.positions >= minPositions && $0.positions <= upper }
        let wanted = PrefixHasher.keys(identity: identity.full, units: units, lengths: Set(candidates.map(\.positions)))
        // Longest first; memory before disk for one length.
        candidates.sort { ($0.positions, $1.onDisk ? 1 : 0) > ($1.positions, $0.onDisk ? 1 : 0) }
        for c in candidates where wanted[c.positions] == c.key {
            let prefix = Array(units[0..<c.positions])
            if !c.onDisk {
                if let s = lock.withLock({ memory.get(c.key) }), s.units == prefix, s.state.shape == shape {
                    countersBox.update { $0.memoryHits += 1 }
                    return s
                }
                continue
            }
            guard let disk else { continue }
            let name = DiskStore.fileName(positions: c.positions, key: c.key)
            guard let bytes = disk.read(name) else { continue }  // evicted meanwhile
            do {
                let s = try SnapshotFormat.decode(bytes, identity: identity, shape: shape)
                guard s.units == prefix else { throw LeapError(.format, "its prompt prefix is not the one its name says") }
                disk.touch(name)
                lock.withLock { memory.put(c.key, s) }
                countersBox.update { $0.diskHits += 1 }
                Log.debug("prompt cache: restored \(c.positions) positions from \(disk.folder)/\(name)")
                return s
            } catch {
                disk.remove(name)
                ignore("\(disk.folder)/\(name): \((error as? LeapError)?.message ?? "\(error)"); removed")
            }
        }
        countersBox.update { $0.misses += 1 }
        return nil
    }

    /// True when `units` is cached in memory or on disk (by name; the file is not read).
    package func contains(_ units: [PrefixUnit]) -> Bool {
        let k = key(of: units)
        if lock.withLock({ memory.contains(k) }) { return true }
        return disk?.list(withStats: false).contains { $0.key == k && $0.positions == units.count } ?? false
    }

    /// Keeps `snapshot` in memory now and, unless `toDisk` is false, queues its disk write (a snapshot
    /// whose key is already on disk is not written again).
    package func insert(_ snapshot: PromptSnapshot, toDisk: Bool = true) {
        let k = key(of: snapshot.units)
        lock.withLock { memory.put(k, snapshot) }
        guard toDisk, let disk else { return }
        let identity = self.identity
        let counters = countersBox
        let name = DiskStore.fileName(positions: snapshot.units.count, key: k)
        writer.enqueue {
            let bytes = SnapshotFormat.encode(snapshot, identity: identity)
            guard bytes.count <= disk.maxBytes else { return }
            do {
                try disk.write(name, bytes)
                counters.update { $0.writes += 1; $0.bytesWritten += bytes.count }
                Log.debug("prompt cache: wrote \(disk.folder)/\(name) (\(bytes.count) bytes)")
            } catch {
                counters.update { $0.writeFailures += 1 }
                Log.warning("prompt cache: \((error as? LeapError)?.message ?? "\(error)")")
            }
        }
    }

    /// Waits until every queued disk write is done.
    package func flush() { writer.waitUntilIdle() }

    private func ignore(_ reason: String) {
        countersBox.update { $0.ignored += 1; $0.lastIgnoredReason = reason }
        Log.warning("prompt cache: ignored snapshot \(reason)")
    }
}

/// The counters, shared with the writer's jobs (which must not hold the cache itself).
private final class CountersBox: @unchecked Sendable {
    private let lock = Lock()
    private var value = PromptCacheCounters()
    func get() -> PromptCacheCounters { lock.withLock { value } }
    func update(_ f: (inout PromptCacheCounters) -> Void) { lock.withLock { f(&value) } }
}
