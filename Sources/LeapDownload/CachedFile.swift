// CachedFile: whether a file already in the download cache is the one a manifest names, so that nothing on
// disk is used on trust.
//
// A cached file must be a regular file of this user (not a link), have the manifest's size when it gives
// one, pass the caller's check of its contents (the GGUF magic of a model...), and hash to the manifest's
// SHA-256 when it gives one. Hashing a multi-gigabyte model on every load would cost seconds, so a file that
// hashed right is remembered in a small record next to it, `.{name}.verified`: its device, inode, size,
// modification time and SHA-256. A record that no longer describes the file (it was replaced, written or
// touched) is ignored and the file hashed again. The record detects damage and replacement, not an
// attacker who can write the cache folder (who could rewrite the record too): the folder is the user's own
// (mode 0700).
import Glibc
import LeapCore
import Synchronization

/// What a downloaded file must be, besides its size and SHA-256: a check of its contents that returns why
/// the file is refused (nil when it passes). It reads the file through `fd` (pread, any offset); `size` is
/// the file's length.
package typealias FileCheck = (_ fd: Int32, _ size: Int64) -> String?

package enum CachedFile {
    /// nil when the file at `path` is complete and right (see above), else why it is not, for the log.
    package static func problem(at path: String, sha256: String?, size: Int64?, check: FileCheck?) -> String? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return "it is not in the cache" }
            if errno == ELOOP { return "it is a symbolic link" }
            return "it cannot be opened: \(errnoText())"
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return "its status cannot be read: \(errnoText())" }
        guard (st.st_mode & S_IFMT) == S_IFREG else { return "it is not a regular file" }
        guard st.st_uid == geteuid() else { return "it belongs to another user (uid \(st.st_uid))" }
        let bytes = Int64(st.st_size)
        if let size, bytes != size { return "it has \(bytes) bytes but the manifest says \(size)" }
        if let check, let why = check(fd, bytes) { return why }
        guard let sha256 else { return nil }
        if let record = readRecord(for: path), record.describes(st), record.sha256 == sha256 { return nil }
        guard let actual = try? Downloader.sha256Hex(of: fd, path: path) else { return "it cannot be read: \(errnoText())" }
        guard actual == sha256 else { return "it hashes to \(actual) but the manifest says \(sha256)" }
        writeRecord(VerificationRecord(st, sha256: actual), for: path)
        return nil
    }

    /// `{folder}/.{name}.verified` for `{folder}/{name}` (cache file names never start with a dot, so no
    /// file of a bundle has this name).
    package static func recordPath(for path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." + path + ".verified" }
        return String(path[...slash]) + "." + path[path.index(after: slash)...] + ".verified"
    }

    /// The record of the file at `path`, nil when there is none or it is not one.
    static func readRecord(for path: String) -> VerificationRecord? {
        let fd = open(recordPath(for: path), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        var buffer = [UInt8](repeating: 0, count: VerificationRecord.maxBytes + 1)
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 && n <= VerificationRecord.maxBytes else { return nil }
        return VerificationRecord(parsing: buffer[0..<n])
    }

    /// Writes the record of the file at `path` (a temporary file renamed over it); a record that cannot be
    /// written only means the file is hashed again next time.
    static func writeRecord(_ record: VerificationRecord, for path: String) {
        let target = recordPath(for: path)
        let tmp = target + ".tmp-\(getpid())-\(uniqueNumber())"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        let bytes = record.encoded
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        if n != bytes.count || rename(tmp, target) != 0 { unlink(tmp) }
    }

    /// Removes the record of the file at `path` (the file was replaced or dropped).
    package static func removeRecord(for path: String) { unlink(recordPath(for: path)) }

    /// Numbers temporary records: two threads may record one file at once.
    private static let counter = Atomic<Int>(0)
    private static func uniqueNumber() -> Int { counter.add(1, ordering: .relaxed).newValue }
}

/// The record of a file that hashed right: "leap-verified 1 <dev> <inode> <size> <mtime s> <mtime ns>
/// <sha256>\n".
package struct VerificationRecord: Equatable, Sendable {
    package static let maxBytes = 256
    package var device: UInt64
    package var inode: UInt64
    package var size: Int64
    package var modifiedSeconds: Int64
    package var modifiedNanoseconds: Int64
    package var sha256: String

    package init(device: UInt64, inode: UInt64, size: Int64, modifiedSeconds: Int64, modifiedNanoseconds: Int64, sha256: String) {
        self.device = device
        self.inode = inode
        self.size = size
        self.modifiedSeconds = modifiedSeconds
        self.modifiedNanoseconds = modifiedNanoseconds
        self.sha256 = sha256
    }

    init(_ st: stat, sha256: String) {
        self.init(device: UInt64(st.st_dev), inode: UInt64(st.st_ino), size: Int64(st.st_size),
                  modifiedSeconds: Int64(st.st_mtim.tv_sec), modifiedNanoseconds: Int64(st.st_mtim.tv_nsec), sha256: sha256)
    }

    /// True when `st` is the file this record was made from, unchanged since.
    func describes(_ st: stat) -> Bool {
        self == VerificationRecord(st, sha256: sha256)
    }

    package var encoded: [UInt8] {
        Array("leap-verified 1 \(device) \(inode) \(size) \(modifiedSeconds) \(modifiedNanoseconds) \(sha256)\n".utf8)
    }

    /// Parses `encoded`'s form exactly; nil for anything else.
    package init?(parsing input: some Collection<UInt8>) {
        let bytes = Array(input.prefix(VerificationRecord.maxBytes + 1))
        guard bytes.count <= VerificationRecord.maxBytes, bytes.last == 0x0A else { return nil }
        let fields = bytes.dropLast().split(separator: 0x20, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        guard fields.count == 8, fields[0] == "leap-verified", fields[1] == "1",
              let device = ResponseHead.decimal(fields[2]), let inode = ResponseHead.decimal(fields[3]),
              let size = ResponseHead.decimal(fields[4]), let seconds = ResponseHead.decimal(fields[5]),
              let nanoseconds = ResponseHead.decimal(fields[6]), nanoseconds < 1_000_000_000,
              let sha = ResponseHead.sha256(etag: fields[7]), sha == fields[7]
        else { return nil }
        self.init(device: UInt64(device), inode: UInt64(inode), size: size, modifiedSeconds: seconds,
                  modifiedNanoseconds: nanoseconds, sha256: sha)
        // Only the exact form written (no leading zeros...): one file, one record.
        guard encoded.elementsEqual(bytes) else { return nil }
    }
}
