import LeapDownload

/// The response headers of a download (ResponseHead.swift): any bytes, one header line per "\n"-ended
/// piece, as libcurl hands them over. A Content-Range that parses has first <= last < total; one written
/// back in its own form parses to itself; a SHA-256 taken from an ETag is 64 lowercase hex digits; a
/// final status is the status line's second space-separated word (bytes: a combining mark after a space
/// hides it from a Character split); the status text keeps at most 200 bytes, the encoding 100.
package let fuzzHTTPHeaders: FuzzTarget = (
    seeds: [
        Array("HTTP/1.1 206 Partial Content\r\nContent-Length: 100\r\nContent-Range: bytes 100-199/200\r\nETag: \"0123456789abcdef0123456789abcdef0123456789abcdef0123456789ABCDEF\"\r\n\r\n".utf8),
        Array("HTTP/1.1 302 Found\r\nX-Linked-ETag: W/\"aa\"\r\nLocation: /x\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/2 416\r\ncontent-range: bytes */1234\r\n\r\n".utf8),
        Array("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\nContent-Encoding: gzip\r\nContent-Range: bytes 5-4/3\r\n\r\n".utf8),
    ],
    run: { bytes in
        var head = ResponseHead()
        for line in bytes.split(separator: 0x0A, omittingEmptySubsequences: false) {
            let before = head
            let ended = head.add(line: line + [0x0A])
            if ended && head.status < 200 { fuzzFailure("headers ended with status \(head.status)") }
            if let range = head.range, range != before.range { checkRange(range) }
            if let sha = head.sha256 { checkSHA(sha) }
            checkStatus(head, line)
            if head.statusText.utf8.count > 200 { fuzzFailure("status text of \(head.statusText.utf8.count) bytes") }
            if let e = head.contentEncoding, e.utf8.count > 100 { fuzzFailure("content encoding of \(e.utf8.count) bytes") }
            let text = String(decoding: line, as: UTF8.self)
            if let range = ContentRange(text) { checkRange(range) }
            if let sha = ResponseHead.sha256(etag: text) { checkSHA(sha) }
        }
    }
)

private func checkRange(_ r: ContentRange) {
    if let first = r.first, let last = r.last {
        if first > last { fuzzFailure("Content-Range first \(first) after last \(last)") }
        if let total = r.total, last >= total { fuzzFailure("Content-Range last \(last) not before total \(total)") }
        let written = "bytes \(first)-\(last)/\(r.total.map(String.init) ?? "*")"
        if ContentRange(written) != r { fuzzFailure("'\(written)' does not parse back to \(r)") }
    } else if r.first != nil || r.last != nil || r.total == nil {
        fuzzFailure("half a Content-Range: \(r)")
    }
}

private func checkSHA(_ sha: String) {
    if sha.utf8.count != 64 || !sha.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) {
        fuzzFailure("'\(sha)' is not a lowercase SHA-256")
    }
}

private func checkStatus(_ head: ResponseHead, _ line: ArraySlice<UInt8>) {
    func space(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0D || c == 0x0A }
    guard line.count < 8192 else { return }   // ResponseHead reads the first 8192 bytes of a line
    guard let first = line.firstIndex(where: { !space($0) }), let last = line.lastIndex(where: { !space($0) }),
          line[first...last].starts(with: "HTTP/".utf8) else { return }
    let words = line[first...last].split(separator: 0x20)
    let code = words.count > 1 ? ResponseHead.decimal(String(decoding: words[1], as: UTF8.self)) : nil
    if let code, code >= 100 && code < 200 { return }   // an interim answer leaves the status as it was
    if Int64(head.status) != (code ?? 0) {
        fuzzFailure("status \(head.status) for the status line '\(String(decoding: line, as: UTF8.self))'")
    }
}
