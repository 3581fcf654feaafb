// The disk side of the prompt cache: one folder per model, one file per snapshot named
// "<positions>-<key>.snap" (key = the prefix hash, PrefixUnit.swift), so that a lookup needs only the
// folder listing. Several processes may share a folder:
//   - a snapshot is written to a temporary file and renamed into place, so a reader never opens a file
//     still being written, and a crash leaves at most a temporary file (removed by a later eviction);
//   - eviction runs under an exclusive flock of the folder's lock file: least recently used first (a hit
//     sets the file's modification time), until the folder is within its entry and byte caps;
//   - a file that vanishes between the listing and the read (another process evicted it) is a miss.
// Nothing in the folder is opened on trust: reads refuse links and anything but a regular file (a FIFO
// named like a snapshot would block a lookup for good), temporary files are created new (O_EXCL, never
// through a link) under names with a random part. The folder must still be the user's own (it is created
// 0700): a snapshot's checksum detects damage, not a snapshot written by someone else.
import Glibc
import LeapCore
import Synchronization

package final class DiskStore: @unchecked Sendable {
    let folder: String
    let maxEntries: Int
    let maxBytes: Int
    private static let suffix = ".snap"
    private static let tmpPrefix = ".tmp-"
    /// A temporary file older than this belongs to a writer that died.
    private static let staleTmpSeconds = 600
    /// Numbers temporary files: process-wide, since two stores (one model loaded twice) or two saves of
    /// one state file may write the same name at once in one process.
    private static let nextTmp = Atomic<Int>(0)

    struct Entry {
        var name: String
        var positions: Int
        var key: String
        var bytes: Int
        var modified: timespec
    }

    /// Creates the folder (and its parents) when missing; throws LeapError(.io) when it cannot be created
    /// or written.
    init(root: String, folderName: String, maxEntries: Int, maxBytes: Int) throws {
        folder = root + "/" + folderName
        self.maxEntries = maxEntries
        self.maxBytes = maxBytes
        try DiskStore.makeDirectories(root)
        try DiskStore.makeDirectories(folder)
        let probe = folder + "/" + DiskStore.tmpPrefix + "probe-" + DiskStore.temporarySuffix()
        let fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw LeapError(.io, "prompt cache folder \(folder) is not writable: \(String(cString: strerror(errno)))")
        }
        close(fd)
        unlink(probe)
    }

    static func makeDirectories(_ path: String) throws {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for part in path.split(separator: "/") {
            prefix += part
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                throw LeapError(.io, "cannot create the prompt cache folder \(prefix): \(String(cString: strerror(errno)))")
            }
            prefix += "/"
        }
        var st = stat()
        guard stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else {
            throw LeapError(.io, "prompt cache path \(path) is not a folder")
        }
    }

    static func fileName(positions: Int, key: String) -> String { "\(positions)-\(key)\(suffix)" }

    /// The snapshots in the folder (unreadable names are skipped); sizes and times only `withStats` (a
    /// lookup needs the names alone).
    func list(withStats: Bool = true) -> [Entry] {
        guard let dir = opendir(folder) else { return [] }
        defer { closedir(dir) }
        var out: [Entry] = []
        while let e = readdir(dir) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            guard !name.hasPrefix("."), name.hasSuffix(DiskStore.suffix), let dash = name.firstIndex(of: "-"),
                  let n = Int(name[name.startIndex..<dash]) else { continue }
            let key = String(name[name.index(after: dash)..<name.index(name.endIndex, offsetBy: -DiskStore.suffix.count)])
            guard key.utf8.count == 64 else { continue }
            var st = stat()
            if withStats { guard lstat(folder + "/" + name, &st) == 0 else { continue } }
            out.append(Entry(name: name, positions: n, key: key, bytes: Int(st.st_size), modified: st.st_mtim))
        }
        return out
    }

    /// The whole file, or nil when it does not exist (any more), cannot be read, is not a regular file or is
    /// larger than the folder's byte cap (no snapshot this large is ever written).
    func read(_ name: String) -> [UInt8]? { try? readRegularFile(folder + "/" + name, limit: maxBytes).get() }

    /// Marks a snapshot as just used (its modification time, which orders eviction).
    func touch(_ name: String) {
        utimensat(AT_FDCWD, folder + "/" + name, nil, 0)
    }

    func remove(_ name: String) { unlink(folder + "/" + name) }

    /// Writes `bytes` as `name` atomically (temporary file + rename), then evicts down to the caps.
    /// Throws LeapError(.io) when the file cannot be written.
    func write(_ name: String, _ bytes: [UInt8]) throws {
        let tmp = folder + "/" + DiskStore.tmpPrefix + DiskStore.temporarySuffix() + "-" + name
        try DiskStore.writeFileAtomically(bytes, to: folder + "/" + name, via: tmp)
        evict()
    }

    /// A part of a temporary file's name that no other temporary file has: the process, a number and a
    /// random part, so that another user cannot guess it and plant a file or a link under it first.
    package static func temporarySuffix() -> String {
        "\(getpid())-\(nextTmp.add(1, ordering: .relaxed).newValue)-" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
    }

    /// Writes `bytes` to `tmp`, a file it creates (never an existing file or a link: it fails then), then
    /// renames it to `path` (readers see the old file or the whole new one).
    package static func writeFileAtomically(_ bytes: [UInt8], to path: String, via tmp: String) throws {
        let fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw LeapError(.io, "cannot create \(tmp): \(String(cString: strerror(errno)))") }
        var done = 0
        var failure: Int32 = 0
        bytes.withUnsafeBytes { buf in
            guard let base = buf.baseAddress else { return }
            while done < buf.count {
                let w = Glibc.write(fd, base + done, buf.count - done)
                if w < 0 && errno == EINTR { continue }
                if w <= 0 { failure = w < 0 ? errno : ENOSPC; return }
                done += w
            }
        }
        if close(fd) != 0 && failure == 0 { failure = errno }
        if failure == 0 && rename(tmp, path) != 0 { failure = errno }
        if failure != 0 {
            unlink(tmp)
            throw LeapError(.io, "cannot write \(path): \(String(cString: strerror(failure)))")
        }
    }

    /// Removes least recently used snapshots until the folder holds at most maxEntries and maxBytes, and
    /// temporary files left by writers that died; one process at a time (flock).
    func evict() {
        let lockFd = open(folder + "/.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
        guard lockFd >= 0 else { return }
        defer { close(lockFd) }
        guard flock(lockFd, LOCK_EX) == 0 else { return }
        defer { flock(lockFd, LOCK_UN) }
        var entries = list()
        entries.sort { a, b in
            (a.modified.tv_sec, a.modified.tv_nsec, a.name) < (b.modified.tv_sec, b.modified.tv_nsec, b.name)
        }
        var total = entries.reduce(0) { $0 + $1.bytes }
        var i = 0
        while i < entries.count && (entries.count - i > maxEntries || total > maxBytes) {
            remove(entries[i].name)
            total -= entries[i].bytes
            i += 1
        }
        removeStaleTemporaries()
    }

    private func removeStaleTemporaries() {
        guard let dir = opendir(folder) else { return }
        var stale: [String] = []
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        while let e = readdir(dir) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            guard name.hasPrefix(DiskStore.tmpPrefix) else { continue }
            var st = stat()
            if lstat(folder + "/" + name, &st) == 0, now.tv_sec - st.st_mtim.tv_sec > DiskStore.staleTmpSeconds { stale.append(name) }
        }
        closedir(dir)
        for name in stale { remove(name) }
    }
}
