// Transfer: one HTTP GET through a libcurl easy handle, with the callbacks that read the headers
// (ResponseHead.swift) and decide on them before any byte of the body is written, write the body (never
// past the manifest's size), report progress (also while nothing arrives) and honour a cancel.
import CLeapCurl
import Glibc
import LeapCore

final class Transfer {
    enum Sink {
        case file(Int32, path: String)
        case memory(limit: Int)
    }

    let curl: CurlLibrary
    let sink: Sink
    /// Bytes already in the file: a Range request asks for the rest.
    private(set) var offset: Int64
    /// The size the file must have (the manifest's), enforced on the headers and on every write.
    let expectedSize: Int64?
    let cancel: DownloadCancellation?
    let progress: DownloadProgressHandler?

    /// Of the last response (a redirect's headers come first and are replaced by the final response's).
    private(set) var head = ResponseHead()
    /// The file's full size once the headers are decided (nil when the server does not say).
    private(set) var total: Int64?
    private(set) var written: Int64 = 0
    private(set) var memory: [UInt8] = []
    private(set) var cancelled = false
    /// An error the callbacks stopped the transfer for (disk full, a range the server got wrong...).
    private(set) var failure: LeapError?
    /// The body is not the file (a redirect's or an error page's): it is read and dropped.
    private var discarding = true
    /// A 200 answered a range request: the .part is emptied before the body is written.
    private var restartPending = false
    private var lastReport = 0.0
    private var errorBuffer = [CChar](repeating: 0, count: CurlLibrary.errorBufferSize)
    var errorText: String { errorBuffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) } }
    var status: Int { head.status }
    var statusText: String { head.statusText }

    init(curl: CurlLibrary, sink: Sink, offset: Int64, expectedSize: Int64? = nil, cancel: DownloadCancellation?,
         progress: DownloadProgressHandler?) {
        self.curl = curl
        self.sink = sink
        self.offset = offset
        self.expectedSize = expectedSize
        self.cancel = cancel
        self.progress = progress
    }

    /// Runs the request; returns the CURLcode.
    func perform(_ url: String, options: DownloadOptions) -> Int32 {
        guard let h = curl.easyInit() else {
            failure = LeapError(.outOfMemory, "curl_easy_init failed")
            return CurlLibrary.Code.ok
        }
        defer { curl.easyCleanup(h) }
        let me = Unmanaged.passUnretained(self).toOpaque()
        var headers: UnsafeMutableRawPointer? = nil
        defer { curl.slistFreeAll(headers) }
        return withExtendedLifetime(self) {
            errorBuffer.withUnsafeMutableBufferPointer { err -> Int32 in
                var status: Int32 = 0
                func set(_ o: CurlLibrary.Option, _ v: Int) { if status == 0 { status = curl.set(h, o, v) } }
                func set(_ o: CurlLibrary.Option, _ p: UnsafeRawPointer?) { if status == 0 { status = curl.set(h, o, p) } }
                url.withCString { set(.url, $0) }
                set(.errorBuffer, UnsafeRawPointer(err.baseAddress))
                set(.noSignal, 1)
                set(.followLocation, 1)
                set(.maxRedirects, 10)
                set(.protocols, CurlLibrary.protocolHTTP | CurlLibrary.protocolHTTPS)
                set(.redirectProtocols, Downloader.redirectProtocols(from: url))
                set(.connectTimeout, max(1, options.connectTimeout))
                // Below 1 byte/s for stallTimeout seconds: the server stopped answering.
                set(.lowSpeedLimit, 1)
                set(.lowSpeedTime, max(1, options.stallTimeout))
                "libleap".withCString { set(.userAgent, $0) }
                set(.writeFunction, unsafeBitCast(writeCallback, to: UnsafeRawPointer.self))
                set(.writeData, UnsafeRawPointer(me))
                set(.headerFunction, unsafeBitCast(headerCallback, to: UnsafeRawPointer.self))
                set(.headerData, UnsafeRawPointer(me))
                set(.xferInfoFunction, unsafeBitCast(xferInfoCallback, to: UnsafeRawPointer.self))
                set(.xferInfoData, UnsafeRawPointer(me))
                set(.noProgress, 0)
                if offset > 0 { "\(offset)-".withCString { set(.range, $0) } }
                // Ask for the bytes as stored: a compressed body would not match the file's size or hash.
                headers = curl.slistAppend(nil, "Accept-Encoding: identity")
                set(.httpHeader, UnsafeRawPointer(headers))
                if status != 0 {
                    failure = LeapError(.internal, "curl_easy_setopt failed: \(curl.message(status))")
                    return CurlLibrary.Code.ok
                }
                // A proxy's "200 Connection established" is not the file's response: keep it from the
                // header callback (an older libcurl without the option passes it on; the file's own
                // status line follows and is decided on again before anything is written).
                _ = curl.set(h, .suppressConnectHeaders, 1)
                if offset > 0 { reportProgress(force: true) }
                let code = curl.easyPerform(h)
                // A 200 with an empty body restarts the file too: it is empty.
                if restartPending && code == CurlLibrary.Code.ok { _ = restart() }
                return code
            }
        }
    }

    // MARK: callbacks

    /// One header line; returns false to abort the transfer.
    fileprivate func header(_ line: UnsafeRawBufferPointer) -> Bool {
        guard head.add(line: line) else { return true }
        return decide()
    }

    /// Decides, once a final response's headers are in and before any of its body, what the body is: the
    /// rest of the file (206 at our offset), the whole file (200: a partial file restarts), or something
    /// to drop (a redirect, an error page). A size that disagrees with the manifest's, a range that is not
    /// the one asked for, or a compressed body stops the transfer here.
    private func decide() -> Bool {
        discarding = true
        restartPending = false
        total = nil
        switch head.status {
        case 206:
            guard let first = head.range?.first, first == offset else {
                failure = LeapError.io("the server sent bytes from \(head.range?.first.map(String.init) ?? "an unstated offset") when \(offset) was asked for")
                return false
            }
            if let rangeTotal = head.range?.total {
                total = rangeTotal
            } else if let contentLength = head.contentLength {
                // The sizes are the server's: a sum past Int64 is a lie, not a file.
                let (sum, overflow) = contentLength.addingReportingOverflow(offset)
                guard !overflow else {
                    failure = LeapError.io("the server announced \(contentLength) bytes after byte \(offset), more than any file can hold")
                    return false
                }
                total = sum
            }
        case 200:
            total = head.contentLength
        default:
            return true
        }
        if let encoding = head.contentEncoding {
            failure = LeapError.io("the server sent the file encoded (Content-Encoding: \(encoding)), not as stored")
            return false
        }
        if let expectedSize, let total, total != expectedSize {
            failure = LeapError.io("the server announced a file of \(total) bytes but the manifest says \(expectedSize)")
            return false
        }
        // The server ignored the Range header (or the file changed): the file starts again from its first
        // byte, once this response is known to be the last (its body begins, or the transfer ends).
        restartPending = head.status == 200 && offset > 0
        discarding = false
        return true
    }

    /// Empties the .part for a 200 answer to a resume.
    private func restart() -> Bool {
        restartPending = false
        guard case .file(let fd, let path) = sink else { return true }
        Log.warning("the server ignored the range request for '\(path)' (HTTP 200, not 206); downloading the file again")
        guard ftruncate(fd, 0) == 0, lseek(fd, 0, SEEK_SET) == 0 else {
            failure = LeapError.io("cannot truncate '\(path)': \(String(cString: strerror(errno)))")
            return false
        }
        offset = 0
        return true
    }

    /// Bytes of the body; returns false to abort the transfer.
    fileprivate func body(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if cancel?.isCancelled == true {
            cancelled = true
            return false
        }
        if discarding { return true }
        if restartPending { guard restart() else { return false } }
        switch sink {
        case .memory(let limit):
            guard memory.count + bytes.count <= limit else {
                failure = LeapError.format("the response is larger than \(limit) bytes")
                return false
            }
            memory.append(contentsOf: bytes)
        case .file(let fd, let path):
            // Never past the manifest's size: a server that sends without end does not fill the disk.
            var count = bytes.count
            if let expectedSize, offset + written + Int64(count) > expectedSize {
                count = Int(max(0, expectedSize - offset - written))
                failure = LeapError.io("the server sent more than the \(expectedSize) bytes the manifest says; the download was stopped there")
            }
            var done = 0
            while done < count {
                let n = write(fd, bytes.baseAddress! + done, count - done)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 {
                    let e = errno
                    let hint = e == ENOSPC ? " (the disk is full)" : e == EFBIG ? " (the file size limit was reached)" : ""
                    let kept = offset + written
                    failure = LeapError.io("cannot write '\(path)': \(String(cString: strerror(e)))\(hint); \(kept) bytes are kept and the next load resumes from there")
                    return false
                }
                done += n
                written += Int64(n)
            }
            if failure != nil { return false }
        }
        reportProgress(force: false)
        return true
    }

    /// libcurl's heartbeat (at least once a second, also while nothing arrives): progress goes to the
    /// caller then too, so that a callback that cancels is heard while the server is silent.
    fileprivate func tick() -> Bool {
        if cancel?.isCancelled != true { reportProgress(force: false) }
        if cancel?.isCancelled == true {
            cancelled = true
            return false
        }
        return true
    }

    private func reportProgress(force: Bool) {
        guard let progress, case .file = sink else { return }
        let now = monotonicNow()
        guard force || now - lastReport >= 0.1 else { return }
        lastReport = now
        progress(offset + written, total)
    }
}

private func monotonicNow() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

// size_t write(char *ptr, size_t size, size_t nmemb, void *userdata): a short count aborts.
private let writeCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = { ptr, size, n, me in
    guard let me else { return 0 }
    let t = Unmanaged<Transfer>.fromOpaque(me).takeUnretainedValue()
    let count = size * n
    return t.body(UnsafeRawBufferPointer(start: ptr, count: count)) ? count : 0
}

// size_t header(char *buffer, size_t size, size_t nitems, void *userdata): one header line per call; a
// short count aborts.
private let headerCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = { ptr, size, n, me in
    guard let me else { return 0 }
    let count = size * n
    return Unmanaged<Transfer>.fromOpaque(me).takeUnretainedValue().header(UnsafeRawBufferPointer(start: ptr, count: count)) ? count : 0
}

// int xferinfo(void *clientp, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow):
// non-zero aborts (CURLE_ABORTED_BY_CALLBACK). Called at least once a second, also while nothing arrives.
private let xferInfoCallback: @convention(c) (UnsafeMutableRawPointer?, Int64, Int64, Int64, Int64) -> Int32 = { me, _, _, _, _ in
    guard let me else { return 1 }
    return Unmanaged<Transfer>.fromOpaque(me).takeUnretainedValue().tick() ? 0 : 1
}
