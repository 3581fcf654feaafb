// Transfer: one HTTP GET through a libcurl easy handle, with the callbacks that write the body, read the
// headers (status, sizes, a checksum), report progress and honour a cancel.
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
    let cancel: DownloadCancellation?
    let progress: DownloadProgressHandler?

    // Of the last response (a redirect's headers come first and are replaced by the final response's).
    private(set) var status = 0
    private(set) var statusText = ""
    private var contentLength: Int64?
    private var contentRangeStart: Int64?
    /// The total size in a `Content-Range: bytes a-b/total` or `bytes */total` header.
    private(set) var rangeTotal: Int64?
    /// A SHA-256 given by any response of the chain (Hugging Face puts it on the redirect).
    private(set) var serverSHA256: String?

    /// The file's full size once the body starts (nil when the server does not say).
    private(set) var total: Int64?
    private(set) var written: Int64 = 0
    private(set) var memory: [UInt8] = []
    private(set) var cancelled = false
    /// An error the callbacks stopped the transfer for (disk full, a range the server got wrong...).
    private(set) var failure: LeapError?
    private var bodyStarted = false
    private var discarding = false
    private var lastReport = 0.0
    private var errorBuffer = [CChar](repeating: 0, count: CurlLibrary.errorBufferSize)
    var errorText: String { errorBuffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) } }

    init(curl: CurlLibrary, sink: Sink, offset: Int64, cancel: DownloadCancellation?, progress: DownloadProgressHandler?) {
        self.curl = curl
        self.sink = sink
        self.offset = offset
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
                set(.redirectProtocols, CurlLibrary.protocolHTTP | CurlLibrary.protocolHTTPS)
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
                if offset > 0 { reportProgress(force: true) }
                return curl.easyPerform(h)
            }
        }
    }

    // MARK: callbacks

    fileprivate func header(_ line: UnsafeRawBufferPointer) {
        let text = String(decoding: line, as: UTF8.self).trimmingSpaces()
        if text.hasPrefix("HTTP/") {
            let parts = text.split(separator: " ", maxSplits: 2)
            let code = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            if code >= 100 && code < 200 { return }   // 100 Continue: the real status follows
            status = code
            statusText = parts.dropFirst().joined(separator: " ")
            contentLength = nil
            contentRangeStart = nil
            rangeTotal = nil
            return
        }
        guard let colon = text.firstIndex(of: ":") else { return }
        let name = String(text[..<colon].lowercased())
        let value = String(text[text.index(after: colon)...]).trimmingSpaces()
        switch name {
        case "content-length":
            contentLength = nonNegative(value)
        case "content-range":
            // "bytes 100-199/200" or "bytes */200"
            guard value.lowercased().hasPrefix("bytes ") else { return }
            let spec = value.dropFirst(6)
            let halves = spec.split(separator: "/", maxSplits: 1)
            if halves.count == 2 { rangeTotal = nonNegative(halves[1]) }
            if let dash = halves.first?.firstIndex(of: "-"), let first = halves.first { contentRangeStart = nonNegative(first[..<dash]) }
        case "etag", "x-linked-etag":
            var v = Substring(value)
            if v.hasPrefix("W/") { v = v.dropFirst(2) }
            v = v.drop { $0 == "\"" }
            while v.last == "\"" { v = v.dropLast() }
            if let hex = try? sha256Hex(String(v)) { serverSHA256 = hex }
        default:
            break
        }
    }

    /// Bytes of the body; returns false to abort the transfer.
    fileprivate func body(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if cancel?.isCancelled == true {
            cancelled = true
            return false
        }
        if !bodyStarted {
            bodyStarted = true
            guard startBody() else { return false }
        }
        if discarding { return true }
        switch sink {
        case .memory(let limit):
            guard memory.count + bytes.count <= limit else {
                failure = LeapError.format("the response is larger than \(limit) bytes")
                return false
            }
            memory.append(contentsOf: bytes)
        case .file(let fd, let path):
            var done = 0
            while done < bytes.count {
                let n = write(fd, bytes.baseAddress! + done, bytes.count - done)
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
        }
        reportProgress(force: false)
        return true
    }

    /// Decides, on the first body byte, what the body is: the rest of the file (206 at our offset), the
    /// whole file (200: a partial file restarts), or an error page to discard.
    private func startBody() -> Bool {
        switch status {
        case 206:
            guard contentRangeStart == offset else {
                failure = LeapError.io("the server sent bytes from \(contentRangeStart.map(String.init) ?? "an unstated offset") when \(offset) was asked for")
                return false
            }
            if let rangeTotal {
                total = rangeTotal
            } else if let contentLength {
                // The sizes are the server's: a sum past Int64 is a lie, not a file.
                let (sum, overflow) = contentLength.addingReportingOverflow(offset)
                guard !overflow else {
                    failure = LeapError.io("the server announced \(contentLength) bytes after byte \(offset), more than any file can hold")
                    return false
                }
                total = sum
            }
        case 200:
            if offset > 0, case .file(let fd, let path) = sink {
                // The server ignored the Range header: start again from the first byte.
                Log.warning("the server ignored the range request for '\(path)' (HTTP 200, not 206); downloading the file again")
                guard ftruncate(fd, 0) == 0, lseek(fd, 0, SEEK_SET) == 0 else {
                    failure = LeapError.io("cannot truncate '\(path)': \(String(cString: strerror(errno)))")
                    return false
                }
                offset = 0
            }
            total = contentLength
        default:
            discarding = true
        }
        return true
    }

    fileprivate func tick() -> Bool {
        if cancel?.isCancelled == true {
            cancelled = true
            return false
        }
        return true
    }

    private func reportProgress(force: Bool) {
        guard let progress else { return }
        let now = monotonicNow()
        guard force || now - lastReport >= 0.1 else { return }
        lastReport = now
        progress(offset + written, total)
    }
}

/// A size or offset in a header: decimal digits only (no sign), nil when not one or past Int64.
private func nonNegative<S: StringProtocol>(_ s: S) -> Int64? {
    guard !s.isEmpty, s.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
    return Int64(s)
}

private func monotonicNow() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

private func sha256Hex(_ s: String) throws -> String {
    let lower = String(s.lowercased())
    guard lower.utf8.count == 64, lower.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else {
        throw LeapError.format("not a SHA-256")
    }
    return lower
}

extension String {
    func trimmingSpaces() -> String {
        let bytes = Array(utf8)
        var start = 0, end = bytes.count
        while start < end && (bytes[start] == 0x20 || bytes[start] == 0x09 || bytes[start] == 0x0D || bytes[start] == 0x0A) { start += 1 }
        while end > start && (bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 || bytes[end - 1] == 0x0D || bytes[end - 1] == 0x0A) { end -= 1 }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }
}

// size_t write(char *ptr, size_t size, size_t nmemb, void *userdata): a short count aborts.
private let writeCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = { ptr, size, n, me in
    guard let me else { return 0 }
    let t = Unmanaged<Transfer>.fromOpaque(me).takeUnretainedValue()
    let count = size * n
    return t.body(UnsafeRawBufferPointer(start: ptr, count: count)) ? count : 0
}

// size_t header(char *buffer, size_t size, size_t nitems, void *userdata): one header line per call.
private let headerCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = { ptr, size, n, me in
    guard let me else { return 0 }
    let count = size * n
    Unmanaged<Transfer>.fromOpaque(me).takeUnretainedValue().header(UnsafeRawBufferPointer(start: ptr, count: count))
    return count
}

// int xferinfo(void *clientp, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow):
// non-zero aborts (CURLE_ABORTED_BY_CALLBACK). Called at least once a second, also while nothing arrives.
private let xferInfoCallback: @convention(c) (UnsafeMutableRawPointer?, Int64, Int64, Int64, Int64) -> Int32 = { me, _, _, _, _ in
    guard let me else { return 1 }
    return Unmanaged<Transfer>.fromOpaque(me).takeUnretainedValue().tick() ? 0 : 1
}
