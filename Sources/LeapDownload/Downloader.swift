// Downloader: one URL to one file, so that a file at the destination is always complete and checked.
//
// Bytes go to `{destination}.part` (opened without following links and locked with flock, PartFile.swift,
// so that two downloads of one file do not interleave); a `.part` left by an earlier attempt is resumed
// with an HTTP Range request (a server that ignores the range and sends the whole file restarts it). The
// caller's size, when given, is enforced from the headers on: a server announcing another size is refused
// before its body, and nothing is written past it. At the end the size is checked against the server's
// (and the caller's), the SHA-256 against the caller's or else the server's (an `X-Linked-ETag` or `ETag`
// header that is 64 hex digits, which is how Hugging Face gives the SHA-256 of its large files), and the
// contents against the caller's check (the GGUF magic of a model...); then the file is fsync'ed and renamed
// to the destination. A cancel, a dropped connection, a full disk or a stalled server leaves only the
// `.part` (the next download resumes from it); a wrong checksum, size or contents deletes it.
import Glibc
import LeapCore
import Synchronization

/// A cancel request for a download, settable from any thread; the download stops within a second
/// (libcurl calls back at least once a second, also while the server sends nothing).
package final class DownloadCancellation: Sendable {
    private let flag = Atomic<Bool>(false)
    /// Cancelling the parent cancels this one too (a call-local cancel under a caller's token).
    private let parent: DownloadCancellation?
    package init(parent: DownloadCancellation? = nil) { self.parent = parent }
    package func cancel() { flag.store(true, ordering: .releasing) }
    package var isCancelled: Bool { flag.load(ordering: .acquiring) || parent?.isCancelled == true }
}

package struct DownloadOptions: Sendable {
    /// A server that sends no byte for this many seconds fails the download ("stopped answering").
    package var stallTimeout = 30
    package var connectTimeout = 30
    /// Attempts per file: a connection dropped after some bytes arrived is resumed up to this many times in all.
    package var maxAttempts = 3
    /// The libcurl to use; nil = `CurlLibrary.shared` (tests give the result of a failed load).
    package var library: Result<CurlLibrary, LeapError>? = nil
    package init() {}
}

/// What a completed download did.
package struct DownloadReport: Equatable, Sendable {
    /// Bytes already in the `.part` file when the first request was sent (0 for a fresh download).
    package var resumedFrom: Int64 = 0
    package var attempts = 0
    package var bytes: Int64 = 0
    /// The checksum the file was checked against (nil when neither the caller nor the server gave one).
    package var verifiedSHA256: String?
    /// Another download (another process) completed the file while this one waited for the .part's
    /// lock: nothing was requested.
    package var foundComplete = false
}

/// Progress of one file: bytes in the file so far, and its size when the server said it.
package typealias DownloadProgressHandler = (_ done: Int64, _ total: Int64?) -> Void

package enum Downloader {
    /// Downloads `url` to `destination` (its folders are created, mode 0700). `sha256`: lowercase hex the
    /// file must hash to; `size`: bytes it must have; `check`: what its contents must pass. When any of
    /// them is given and the destination, checked under the .part's lock, already passes them all, nothing
    /// is downloaded (another process finished it). `progress` runs on the calling thread, at most ten
    /// times a second while bytes arrive and at least once a second while none do, plus once at the end.
    /// Errors (the message names the URL or file): `.unsupported` (libcurl missing), `.cancelled`, `.busy`
    /// (another download of the same file is running), `.io` (HTTP error status, unreachable or stalled
    /// server, connection dropped, disk full, size, checksum or contents wrong, a .part that is a link or
    /// not this user's file).
    @discardableResult
    package static func download(_ url: String, to destination: String, sha256: String? = nil, size: Int64? = nil,
                                 check: FileCheck? = nil, options: DownloadOptions = DownloadOptions(),
                                 cancel: DownloadCancellation? = nil, progress: DownloadProgressHandler? = nil) throws -> DownloadReport {
        let curl = try (options.library ?? CurlLibrary.shared).get()
        try makeDirectories(parentOf: destination)
        let part = destination + ".part"
        let fd = try PartFile.openLocked(part, destination: destination)
        defer { close(fd) }
        do {
            if sha256 != nil || size != nil || check != nil,
               CachedFile.problem(at: destination, sha256: sha256, size: size, check: check) == nil {
                if fileSize(fd) == 0 { unlink(part) }
                Log.info("'\(destination)' was completed by another download; \(url) is not requested")
                var report = DownloadReport()
                report.foundComplete = true
                report.bytes = Int64(fileSize(path: destination))
                report.verifiedSHA256 = sha256
                return report
            }
            return try download(url, fd: fd, part: part, to: destination, sha256: sha256, size: size, check: check,
                                curl: curl, options: options, cancel: cancel, progress: progress)
        } catch {
            // A failure before the first byte leaves nothing behind, not even an empty .part.
            if fileSize(fd) == 0 && PartFile.isCurrent(fd, path: part) { unlink(part) }
            throw error
        }
    }

    /// `download` once the .part file is open and locked.
    private static func download(_ url: String, fd: Int32, part: String, to destination: String, sha256: String?,
                                 size: Int64?, check: FileCheck?, curl: CurlLibrary, options: DownloadOptions,
                                 cancel: DownloadCancellation?, progress: DownloadProgressHandler?) throws -> DownloadReport {
        var report = DownloadReport()
        if let size, fileSize(fd) > size {
            Log.warning("'\(part)' is longer than the \(size) bytes the manifest gives; downloading the file again")
            guard ftruncate(fd, 0) == 0 else { throw LeapError.io("cannot truncate '\(part)': \(errnoText())") }
        }
        report.resumedFrom = fileSize(fd)
        if report.resumedFrom > 0 {
            Log.info("resuming \(url) from byte \(report.resumedFrom) of '\(part)'")
        } else {
            Log.info("downloading \(url) to '\(destination)'")
        }
        var total: Int64? = nil
        var serverSHA256: String? = nil
        var restarted = false
        while true {
            report.attempts += 1
            let offset = fileSize(fd)
            guard lseek(fd, off_t(offset), SEEK_SET) >= 0 else { throw LeapError.io("cannot seek in '\(part)': \(errnoText())") }
            let t = Transfer(curl: curl, sink: .file(fd, path: part), offset: offset, expectedSize: size, cancel: cancel,
                             progress: progress)
            let code = t.perform(url, options: options)
            if cancel?.isCancelled == true || t.cancelled {
                throw LeapError(.cancelled, "download of \(url) cancelled; \(fileSize(fd)) bytes are kept in '\(part)' and the next load resumes from there")
            }
            if let failure = t.failure { throw LeapError(failure.kind, "\(url): \(failure.message)") }
            if t.total != nil { total = t.total }
            if t.head.sha256 != nil { serverSHA256 = t.head.sha256 }
            let done = fileSize(fd)
            if code == CurlLibrary.Code.ok {
                if t.status == 200 || t.status == 206 { break }
                if t.status == 416 && offset > 0 {
                    // The range starts at or past the end: complete when the server's size is what we have,
                    // else the .part is longer than the file (which changed): start again, once.
                    if let rangeTotal = t.head.range?.total, rangeTotal == offset { total = offset; break }
                    if !restarted {
                        Log.warning("\(url): '\(part)' is longer than the file on the server; downloading it again")
                        guard ftruncate(fd, 0) == 0 else { throw LeapError.io("cannot truncate '\(part)': \(errnoText())") }
                        restarted = true
                        continue
                    }
                }
                throw LeapError.io("\(url): the server answered HTTP \(t.statusText)")
            }
            let dropped = [CurlLibrary.Code.partialFile, CurlLibrary.Code.recvError, CurlLibrary.Code.gotNothing,
                           CurlLibrary.Code.sendError].contains(code)
            if dropped && t.written > 0 && report.attempts < options.maxAttempts {
                Log.info("\(url): the connection was closed after \(done) bytes; resuming (attempt \(report.attempts + 1) of \(options.maxAttempts))")
                continue
            }
            throw LeapError.io(failureMessage(url, code: code, t, done: done, part: part, options: options))
        }
        let bytes = fileSize(fd)
        if let total, bytes != total {
            throw LeapError.io("\(url): the file has \(bytes) bytes but the server announced \(total); they are kept in '\(part)'")
        }
        if let size, bytes != size {
            unlink(part)
            throw LeapError.io("\(url): the file has \(bytes) bytes but the manifest says \(size); the download was deleted")
        }
        progress?(bytes, total ?? bytes)
        if let expected = sha256 ?? serverSHA256 {
            let actual = try sha256Hex(of: fd, path: part)
            guard actual == expected else {
                unlink(part)
                let source = sha256 != nil ? "the manifest says" : "the server's ETag says"
                throw LeapError.io("\(url): SHA-256 mismatch: the downloaded file hashes to \(actual) but \(source) \(expected); the download was deleted")
            }
            report.verifiedSHA256 = actual
        } else {
            Log.info("\(url): neither the manifest nor the server gives a SHA-256; only the size was checked")
        }
        // A body that is not the file (an error page sent as 200, zeros, a cut without a stated length)
        // must not be renamed into place, where every later load would find it.
        if let check, let why = check(fd, bytes) {
            unlink(part)
            throw LeapError.io("\(url): the downloaded file is not usable: \(why); the download was deleted")
        }
        guard fsync(fd) == 0 else { throw LeapError.io("cannot write '\(part)' to disk: \(errnoText())") }
        CachedFile.removeRecord(for: destination)
        guard rename(part, destination) == 0 else { throw LeapError.io("cannot rename '\(part)' to '\(destination)': \(errnoText())") }
        var st = stat()
        if let verified = report.verifiedSHA256, fstat(fd, &st) == 0 {
            CachedFile.writeRecord(VerificationRecord(st, sha256: verified), for: destination)
        }
        syncDirectory(of: destination)
        report.bytes = bytes
        return report
    }

    /// The body of `url` (HTTP 200) in memory, refused past `maxBytes`. Errors as `download`.
    package static func fetch(_ url: String, maxBytes: Int, options: DownloadOptions = DownloadOptions(),
                              cancel: DownloadCancellation? = nil) throws -> [UInt8] {
        let curl = try (options.library ?? CurlLibrary.shared).get()
        var attempt = 0
        while true {
            attempt += 1
            let t = Transfer(curl: curl, sink: .memory(limit: maxBytes), offset: 0, cancel: cancel, progress: nil)
            let code = t.perform(url, options: options)
            if cancel?.isCancelled == true || t.cancelled { throw LeapError(.cancelled, "download of \(url) cancelled") }
            if let failure = t.failure { throw failure }
            if code == CurlLibrary.Code.ok {
                guard t.status == 200 else { throw LeapError.io("\(url): the server answered HTTP \(t.statusText)") }
                return t.memory
            }
            let dropped = [CurlLibrary.Code.partialFile, CurlLibrary.Code.recvError, CurlLibrary.Code.gotNothing].contains(code)
            if dropped && attempt < options.maxAttempts { continue }
            throw LeapError.io(failureMessage(url, code: code, t, done: Int64(t.memory.count), part: nil, options: options))
        }
    }

    /// The protocols (CURLPROTO_* bits) a redirect from `url` may go to: https only from an https URL (a
    /// redirect to plain http would hand the file to anyone on the path), http or https from http.
    package static func redirectProtocols(from url: String) -> Int {
        url.utf8.prefix(8).map { $0 | 0x20 }.elementsEqual("https://".utf8)
            ? CurlLibrary.protocolHTTPS : CurlLibrary.protocolHTTP | CurlLibrary.protocolHTTPS
    }

    private static func failureMessage(_ url: String, code: Int32, _ t: Transfer, done: Int64, part: String?,
                                       options: DownloadOptions) -> String {
        let detail = t.errorText.isEmpty ? t.curl.message(code) : t.errorText
        let kept = part.map { done > 0 ? "; \(done) bytes are kept in '\($0)' and the next load resumes from there" : "" } ?? ""
        switch code {
        case CurlLibrary.Code.couldntResolveHost, CurlLibrary.Code.couldntResolveProxy, CurlLibrary.Code.couldntConnect:
            return "\(url): cannot connect to the server (\(detail))"
        case CurlLibrary.Code.operationTimedOut:
            return t.written > 0 || t.status != 0
                ? "\(url): the server stopped answering (no data for \(options.stallTimeout) s)\(kept)"
                : "\(url): the server did not answer (\(detail))\(kept)"
        case CurlLibrary.Code.partialFile, CurlLibrary.Code.recvError, CurlLibrary.Code.gotNothing, CurlLibrary.Code.sendError:
            let of = t.total.map { " of \($0)" } ?? ""
            return "\(url): the connection was closed after \(done)\(of) bytes (\(detail))\(kept)"
        case CurlLibrary.Code.unsupportedProtocol:
            return redirectProtocols(from: url) == CurlLibrary.protocolHTTPS
                ? "\(url): a redirect to a URL that is not https was refused, or this libcurl cannot fetch https (\(detail))"
                : "\(url): not an http or https URL this libcurl can fetch (\(detail))"
        case CurlLibrary.Code.tooManyRedirects:
            return "\(url): too many redirects (\(detail))"
        default:
            return "\(url): download failed (\(detail))\(kept)"
        }
    }

    static func fileSize(_ fd: Int32) -> Int64 {
        var st = stat()
        return fstat(fd, &st) == 0 ? Int64(st.st_size) : 0
    }

    static func fileSize(path: String) -> Int64 {
        var st = stat()
        return lstat(path, &st) == 0 ? Int64(st.st_size) : 0
    }

    /// Lowercase hex SHA-256 of the whole file behind `fd`.
    static func sha256Hex(of fd: Int32, path: String) throws -> String {
        var hash = SHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset: off_t = 0
        while true {
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offset) }
            if n < 0 {
                if errno == EINTR { continue }
                throw LeapError.io("cannot read '\(path)': \(errnoText())")
            }
            if n == 0 { break }
            buffer.withUnsafeBytes { hash.update(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            offset += off_t(n)
        }
        return SHA256.hex(hash.finalize())
    }

    /// mkdir -p of the folder holding `path`; the folders it creates are the user's alone (0700), since a
    /// cache shared with other users would let them plant files and links in it.
    package static func makeDirectories(parentOf path: String) throws {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return }
        var prefix = ""
        for part in path[..<slash].split(separator: "/", omittingEmptySubsequences: false) {
            prefix += prefix.isEmpty && part.isEmpty ? "/" : (prefix.isEmpty || prefix == "/" ? "" : "/") + part
            if part.isEmpty || part == "." { continue }
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                throw LeapError.io("cannot create the folder '\(prefix)': \(errnoText())")
            }
        }
    }

    /// The rename is durable once the folder's entry is on disk too.
    static func syncDirectory(of path: String) {
        let dir = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        let fd = open(dir.isEmpty ? "/" : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }
}

func errnoText() -> String { String(cString: strerror(errno)) }
