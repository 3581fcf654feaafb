import Glibc
import Testing
import LeapCore
import LeapGGUF
import LeapModels
import LeapPromptCache
import Synchronization

// The store: longest-prefix lookup, memory and disk caps with least-recently-used eviction, a folder per
// model shared across cache instances (as across processes), damaged files ignored and reported.

private struct Fixture {
    let identity: ModelIdentity
    let model: LanguageModel
    let ctx: InferenceContext
    let prompt: [Int32]

    init() throws {
        let (file, model) = try loadTinyFile("lfm2-tiny-f32")
        identity = ModelIdentity(file: file)
        self.model = model
        ctx = try model.makeContext(contextSize: 64)
        prompt = tokens(40, seed: 21, vocab: model.config.nVocab)
        try ctx.eval(tokens: prompt)
    }

    func snapshot(_ n: Int) throws -> PromptSnapshot {
        PromptSnapshot(units: prompt[0..<n].map { .token($0) }, state: try ctx.captureState(positions: n))
    }
    var units: [PrefixUnit] { prompt.map { .token($0) } }
    var shape: ContextStateShape { ctx.stateShape }
}

private func options(_ path: String?, disk: Bool = true) -> PromptCacheOptions {
    var o = PromptCacheOptions(path: path, enabled: true)
    o.diskDisabled = !disk
    return o
}

@Test func lookupFindsTheLongestCachedPrefixWithinBounds() throws {
    let f = try Fixture()
    let cache = try PromptCache(options: options(nil, disk: false), identity: f.identity)
    cache.insert(try f.snapshot(10))
    cache.insert(try f.snapshot(25))
    #expect(cache.lookup(f.units, minPositions: 1, maxPositions: 39, shape: f.shape)?.units.count == 25)
    #expect(cache.lookup(f.units, minPositions: 1, maxPositions: 24, shape: f.shape)?.units.count == 10)
    #expect(cache.lookup(f.units, minPositions: 26, maxPositions: 39, shape: f.shape) == nil)
    var other = f.units
    other[5] = .token(f.prompt[5] == 0 ? 1 : 0)
    #expect(cache.lookup(other, minPositions: 1, maxPositions: 39, shape: f.shape) == nil)
    #expect(cache.counters.memoryHits == 2 && cache.counters.misses == 2)
}

@Test func memoryCapsEvictTheLeastRecentlyUsed() throws {
    let f = try Fixture()
    var o = options(nil, disk: false)
    o.maxEntriesMemory = 2
    let cache = try PromptCache(options: o, identity: f.identity)
    cache.insert(try f.snapshot(5))
    cache.insert(try f.snapshot(6))
    _ = cache.lookup(Array(f.units[0..<6]), minPositions: 5, maxPositions: 5, shape: f.shape)  // 5 is now the most recent
    cache.insert(try f.snapshot(7))                                                             // evicts 6
    #expect(cache.contains(Array(f.units[0..<5])))
    #expect(!cache.contains(Array(f.units[0..<6])))
    #expect(cache.contains(Array(f.units[0..<7])))
    // Bytes: room for one snapshot of 21 positions, not for it and one of 20.
    var b = options(nil, disk: false)
    b.maxBytesMemory = try f.snapshot(21).state.byteCount + 1
    let small = try PromptCache(options: b, identity: f.identity)
    small.insert(try f.snapshot(20))
    small.insert(try f.snapshot(21))
    #expect(!small.contains(Array(f.units[0..<20])))
    #expect(small.contains(Array(f.units[0..<21])))
    small.insert(try f.snapshot(22))   // larger than the cap: not kept, nothing evicted
    #expect(!small.contains(Array(f.units[0..<22])))
    #expect(small.contains(Array(f.units[0..<21])))
}

@Test func diskSnapshotsSurviveTheCacheAndEvictLeastRecentlyUsed() throws {
    let f = try Fixture()
    let root = temporaryFolder("cache-disk")
    defer { removeTree(root) }
    var o = options(root)
    o.maxEntriesDisk = 3
    o.maxEntriesMemory = 0
    do {
        let cache = try PromptCache(options: o, identity: f.identity)
        for n in [8, 9, 10] {
            cache.insert(try f.snapshot(n))
            cache.flush()
            usleep(20_000)   // distinct modification times
        }
        #expect(cache.counters.writes == 3)
    }
    // A new cache on the same folder (as a later process) hits; the hit makes 8 the most recent.
    let later = try PromptCache(options: o, identity: f.identity)
    let folder = later.folder ?? ""
    #expect(fileNames(in: folder).filter { $0.hasSuffix(".snap") }.count == 3)
    let hit = later.lookup(f.units, minPositions: 1, maxPositions: 8, shape: f.shape)
    #expect(hit?.units.count == 8)
    if let hit { #expect(hit.units == Array(f.units[0..<8])) }
    #expect(later.counters.diskHits == 1)
    usleep(20_000)
    later.insert(try f.snapshot(11))
    later.flush()
    let left = Set(fileNames(in: folder).filter { $0.hasSuffix(".snap") }.map { Int($0.split(separator: "-")[0]) ?? -1 })
    #expect(left == [8, 10, 11], "9 was the least recently used")
    #expect(!fileNames(in: folder).contains { $0.hasPrefix(".tmp-") })
    // Byte cap: room for two files.
    let one = (try? readRegularFile(folder + "/" + (fileNames(in: folder).first { $0.hasSuffix(".snap") } ?? ""), limit: .max).get())?.count ?? 0
    var tight = o
    tight.maxBytesDisk = 2 * one + one / 2 + 200
    let capped = try PromptCache(options: tight, identity: f.identity)
    capped.insert(try f.snapshot(12))
    capped.flush()
    #expect(fileNames(in: folder).filter { $0.hasSuffix(".snap") }.count == 2)
}

@Test func damagedAndForeignFilesAreIgnoredRemovedAndLogged() throws {
    let f = try Fixture()
    let root = temporaryFolder("cache-damaged")
    defer { removeTree(root) }
    let cache = try PromptCache(options: { var o = options(root); o.maxEntriesMemory = 0; return o }(), identity: f.identity)
    cache.insert(try f.snapshot(16))
    cache.flush()
    let folder = cache.folder ?? ""
    guard let name = fileNames(in: folder).first(where: { $0.hasSuffix(".snap") }), var bytes = (try? readRegularFile(folder + "/" + name, limit: .max).get()) else {
        Issue.record("no snapshot written")
        return
    }
    let warnings = WarningLog()
    Log.setSink({ level, message in if level == .warning { warnings.append(message) } }, maxLevel: .warning)
    defer { Log.setSink(nil) }
    bytes[bytes.count / 2] ^= 0x10
    try DiskStore.writeFileAtomically(bytes, to: folder + "/" + name, via: folder + "/.tmp-test")
    #expect(cache.lookup(f.units, minPositions: 1, maxPositions: 39, shape: f.shape) == nil)
    #expect(cache.counters.ignored == 1)
    #expect(cache.counters.lastIgnoredReason.contains("damaged"))
    #expect(!fileNames(in: folder).contains(name), "the damaged file is removed")
    #expect(warnings.messages.contains { $0.contains("ignored snapshot") && $0.contains(name) })
    // Another model's snapshot under a name this model would look up (only a forged file can do that).
    let (otherFile, _) = try loadTinyFile("lfm2-tiny-q8_0")
    let foreign = SnapshotFormat.encode(try f.snapshot(16), identity: ModelIdentity(file: otherFile))
    try DiskStore.writeFileAtomically(foreign, to: folder + "/" + name, via: folder + "/.tmp-test")
    #expect(cache.lookup(f.units, minPositions: 1, maxPositions: 39, shape: f.shape) == nil)
    #expect(cache.counters.lastIgnoredReason.contains("another model"))
}

@Test func aFileLargerThanTheByteCapIsNotRead() throws {
    let f = try Fixture()
    let root = temporaryFolder("cache-huge")
    defer { removeTree(root) }
    let cache = try PromptCache(options: options(root), identity: f.identity)
    let folder = cache.folder ?? ""
    // A sparse file of 1 TiB under the name a lookup of 16 positions reads: reading it whole would allocate
    // 1 TiB. It is larger than the folder's cap (4 GiB), so no snapshot of this cache can be that file.
    let name = "16-\(cache.key(of: Array(f.units[0..<16]))).snap"  // "<positions>-<key>.snap"
    let fd = open(folder + "/" + name, O_WRONLY | O_CREAT, 0o644)
    #expect(fd >= 0 && ftruncate(fd, 1 << 40) == 0)
    close(fd)
    #expect(readRegularFile(folder + "/" + name, limit: 1 << 32) == .failure(.tooLarge))
    #expect(cache.lookup(f.units, minPositions: 1, maxPositions: 39, shape: f.shape) == nil)
    #expect(cache.counters.misses == 1)
}

@Test func aDeadWritersTemporaryFileIsRemovedAndALiveOnesIsKept() throws {
    let f = try Fixture()
    let root = temporaryFolder("cache-tmp")
    defer { removeTree(root) }
    let cache = try PromptCache(options: options(root), identity: f.identity)
    let folder = cache.folder ?? ""
    // A writer that died an hour ago, and one writing now (both half files, never read: no .snap name).
    let dead = folder + "/.tmp-999999-1-5-x.snap", live = folder + "/.tmp-999999-2-5-x.snap"
    try DiskStore.writeFileAtomically([1, 2, 3], to: dead, via: folder + "/.tmp-setup")
    try DiskStore.writeFileAtomically([1, 2, 3], to: live, via: folder + "/.tmp-setup")
    var old = [timespec(tv_sec: time(nil) - 3600, tv_nsec: 0), timespec(tv_sec: time(nil) - 3600, tv_nsec: 0)]
    #expect(utimensat(AT_FDCWD, dead, &old, 0) == 0)
    cache.insert(try f.snapshot(5))
    cache.flush()
    let names = fileNames(in: folder)
    #expect(!names.contains(".tmp-999999-1-5-x.snap"))
    #expect(names.contains(".tmp-999999-2-5-x.snap"))
    #expect(names.filter { $0.hasSuffix(".snap") && !$0.hasPrefix(".") }.count == 1)
    #expect(cache.lookup(f.units, minPositions: 1, maxPositions: 39, shape: f.shape)?.units.count == 5)
}

@Test func anUnwritableFolderIsAClearError() throws {
    let f = try Fixture()
    let root = temporaryFolder("cache-unwritable")
    defer { removeTree(root) }
    let plainFile = root + "/file"
    try DiskStore.writeFileAtomically([1], to: plainFile, via: root + "/.tmp")
    do {
        _ = try PromptCache(options: options(plainFile + "/cache"), identity: f.identity)
        Issue.record("a cache under a regular file was created")
    } catch let e as LeapError {
        #expect(e.kind == .io)
        #expect(e.message.contains(plainFile))
    }
    #expect(throws: LeapError.self) { try PromptCache(options: options(nil), identity: f.identity) }
    #expect(throws: LeapError.self) { try PromptCache(options: { var o = options(root); o.maxEntriesDisk = 0; return o }(), identity: f.identity) }
}

final class WarningLog: @unchecked Sendable {
    private let lock = Lock()
    private var items: [String] = []
    func append(_ s: String) { lock.withLock { items.append(s) } }
    var messages: [String] { lock.withLock { items } }
}

/// Runs `body` on a new thread; true when it returned within `seconds`, else false (`unblock` is then
/// called, once, to let it finish before this returns).
private func finishes(within seconds: Double, unblock: () -> Void, _ body: @escaping () -> Void) -> Bool {
    final class Box: @unchecked Sendable {
        let body: () -> Void
        let done = Atomic<Bool>(false)
        init(_ body: @escaping () -> Void) { self.body = body }
    }
    let box = Box(body)
    var thread = pthread_t()
    pthread_create(&thread, nil, { p in
        let b = Unmanaged<Box>.fromOpaque(p!).takeRetainedValue()
        b.body()
        b.done.store(true, ordering: .releasing)
        return nil
    }, Unmanaged.passRetained(box).toOpaque())
    var waited = 0.0
    while !box.done.load(ordering: .acquiring) && waited < seconds {
        usleep(10_000)
        waited += 0.01
    }
    let finished = box.done.load(ordering: .acquiring)
    if !finished { unblock() }
    pthread_join(thread, nil)
    return finished
}

@Test func aFIFONamedLikeASnapshotIsSkippedNotWaitedOn() throws {
    let f = try Fixture()
    let root = temporaryFolder("cache-fifo")
    defer { removeTree(root) }
    let cache = try PromptCache(options: { var o = options(root); o.maxEntriesMemory = 0; return o }(), identity: f.identity)
    cache.insert(try f.snapshot(10))
    cache.flush()
    let folder = cache.folder ?? ""
    // The longest prefix a lookup of 39 positions tries first is 20: a FIFO there would block its read
    // until some process opened it for writing.
    let fifo = folder + "/20-\(cache.key(of: Array(f.units[0..<20]))).snap"
    #expect(mkfifo(fifo, 0o600) == 0)
    var hit: Int? = nil
    let finished = finishes(within: 5, unblock: { close(open(fifo, O_WRONLY | O_NONBLOCK)) }) {
        hit = cache.lookup(f.units, minPositions: 1, maxPositions: 39, shape: f.shape)?.units.count
    }
    #expect(finished, "the lookup waited on the FIFO")
    #expect(hit == 10)
    #expect(readRegularFile(fifo, limit: .max) == .failure(.notRegularFile))
    #expect(readRegularFile(fifo, limit: .max, followLinks: true) == .failure(.notRegularFile))
}

@Test func linksInTheFolderAreNeitherReadNorWrittenThrough() throws {
    let root = temporaryFolder("cache-links")
    defer { removeTree(root) }
    let victim = root + "/victim"
    try DiskStore.writeFileAtomically([9, 9, 9], to: victim, via: root + "/.tmp-setup")
    // A link planted under a temporary name: the write fails instead of truncating the target.
    #expect(symlink(victim, root + "/.tmp-planted") == 0)
    #expect(throws: LeapError.self) { try DiskStore.writeFileAtomically([1, 2], to: root + "/target", via: root + "/.tmp-planted") }
    #expect((try? readRegularFile(victim, limit: .max).get()) == [9, 9, 9])
    // So does an existing file under it (a temporary file is always a new one).
    try DiskStore.writeFileAtomically([7], to: root + "/.tmp-existing", via: root + "/.tmp-setup")
    #expect(throws: LeapError.self) { try DiskStore.writeFileAtomically([1, 2], to: root + "/target", via: root + "/.tmp-existing") }
    #expect((try? readRegularFile(root + "/.tmp-existing", limit: .max).get()) == [7])
    #expect((try? readRegularFile(root + "/target", limit: .max).get()) == nil)
    // A snapshot name that is a link is not read (a caller's own path may be, for load_state).
    #expect(symlink(victim, root + "/link.snap") == 0)
    #expect(readRegularFile(root + "/link.snap", limit: .max) == .failure(.system(ELOOP)))
    #expect(readRegularFile(root + "/link.snap", limit: .max, followLinks: true) == .success([9, 9, 9]))
    // Temporary names are not guessable: each has a random part.
    let a = DiskStore.temporarySuffix(), b = DiskStore.temporarySuffix()
    #expect(a != b && a.split(separator: "-").count == 3 && a.split(separator: "-")[2] != b.split(separator: "-")[2])
}

@Test func theCacheFolderIsTheUsersAlone() throws {
    let f = try Fixture()
    let root = temporaryFolder("cache-mode") + "/new/root"
    defer { removeTree(String(root.dropLast("/new/root".count))) }
    let cache = try PromptCache(options: options(root), identity: f.identity)
    for folder in [root, cache.folder ?? ""] {
        var st = stat()
        #expect(stat(folder, &st) == 0 && st.st_mode & 0o777 == 0o700, "\(folder)")
    }
}

@Test func aFileOfUnknownSizeIsReadToItsEndWithinTheLimit() {
    // procfs reports size 0 for its files: they are read in chunks, and the limit still holds.
    guard case .success(let status) = readRegularFile("/proc/self/status", limit: 1 << 20) else {
        Issue.record("/proc/self/status was not read")
        return
    }
    #expect(String(decoding: status, as: UTF8.self).contains("\nVmRSS:"))
    #expect(readRegularFile("/proc/self/status", limit: 16) == .failure(.tooLarge))
    #expect(readRegularFile("/proc/self", limit: .max, followLinks: true) == .failure(.notRegularFile))
}
