// Reading a whole file without trusting it: at most `limit` bytes are ever allocated, only a regular file is
// read (a FIFO would block for good, a folder or device is not data), and a link is followed only when asked.
import Glibc

/// Why `readRegularFile` failed.
package enum ReadFileFailure: Error, Equatable {
    case tooLarge
    case notRegularFile
    case system(Int32)
}

/// The whole regular file at `path`, at most `limit` bytes. It is opened without blocking and, unless
/// `followLinks`, without following a symbolic link. A file whose size fstat knows is read in one piece of
/// that size (nothing is allocated for one over the limit); one that reports size 0 (procfs, sysfs) is read
/// in chunks until its end.
package func readRegularFile(_ path: String, limit: Int, followLinks: Bool = false) -> Result<[UInt8], ReadFileFailure> {
    let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (followLinks ? 0 : O_NOFOLLOW))
    guard fd >= 0 else { return .failure(.system(errno)) }
    defer { close(fd) }
    var st = stat()
    guard fstat(fd, &st) == 0 else { return .failure(.system(errno)) }
    guard (st.st_mode & S_IFMT) == S_IFREG, st.st_size >= 0 else { return .failure(.notRegularFile) }
    guard st.st_size <= limit else { return .failure(.tooLarge) }
    return st.st_size > 0 ? readKnownSize(fd, Int(st.st_size)) : readUntilEnd(fd, limit: limit)
}

/// A file a person named (a program's argument, a test's fixture): a link is followed, any size is read.
/// Nil when it cannot be read. What the library reads for itself goes through `readRegularFile`'s limit.
package func readFile(_ path: String) -> [UInt8]? { try? readRegularFile(path, limit: .max, followLinks: true).get() }

/// Exactly `size` (> 0) bytes from `fd`'s start; a file that ends sooner is an I/O error.
private func readKnownSize(_ fd: Int32, _ size: Int) -> Result<[UInt8], ReadFileFailure> {
    var failure: Int32 = 0
    let out = [UInt8](unsafeUninitializedCapacity: size) { buf, initialized in
        var done = 0
        if let base = buf.baseAddress {
            while done < size {
                let r = Glibc.read(fd, base + done, size - done)
                if r < 0 && errno == EINTR { continue }
                if r < 0 { failure = errno }
                if r <= 0 { break }
                done += r
            }
        }
        if done != size && failure == 0 { failure = EIO }
        initialized = failure == 0 ? size : 0
    }
    return failure == 0 ? .success(out) : .failure(.system(failure))
}

/// Everything `fd` gives until its end, for files whose size is not known ahead (at most `limit` bytes).
private func readUntilEnd(_ fd: Int32, limit: Int) -> Result<[UInt8], ReadFileFailure> {
    var out: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let r = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        if r < 0 && errno == EINTR { continue }
        if r < 0 { return .failure(.system(errno)) }
        if r == 0 { return .success(out) }
        guard r <= limit - out.count else { return .failure(.tooLarge) }
        out += chunk[0..<r]
    }
}
