// ResponseHead: the status line and the headers of an HTTP response that a download decides on, parsed
// from the lines libcurl hands over one at a time (the server's bytes, so anything may arrive: a field that
// does not parse is left unset, never guessed). A redirect's headers come first; a new status line starts
// a new response, except the SHA-256, which Hugging Face puts on the redirect and not on the file's response.
import LeapCore

package struct ResponseHead: Equatable, Sendable {
    /// 0 until a status line arrives (1xx interim answers are skipped: the real status follows).
    package private(set) var status = 0
    /// The status line after the protocol ("404 Not Found"), for messages; at most 200 bytes of it.
    package private(set) var statusText = ""
    package private(set) var contentLength: Int64?
    /// `Content-Range: bytes first-last/total` (total nil for "*") or `bytes */total` (first nil).
    package private(set) var range: ContentRange?
    /// A SHA-256 given by an `ETag` or `X-Linked-ETag` of any response of the chain (lowercase hex).
    package private(set) var sha256: String?
    /// A `Content-Encoding` other than identity: the body is not the file's bytes.
    package private(set) var contentEncoding: String?
    /// True once the blank line ending a final (not 1xx) response's headers arrived.
    package private(set) var complete = false

    package init() {}

    /// Takes one header line (with or without its CRLF). Returns true when it is the blank line ending the
    /// headers of a response that is not an interim 1xx answer (once per response).
    ///
    /// The line is read as bytes, as HTTP defines it: a combining mark after a space or a colon makes one
    /// Character with it (so a Character split would take another word as the status code, or another
    /// colon as the end of the name), "\r\n" is one Character, and Unicode lowercasing maps the Kelvin
    /// sign to "k" (a field name is ASCII, compared without ASCII case).
    @discardableResult
    package mutating func add(line raw: some Collection<UInt8>) -> Bool {
        let line = ResponseHead.trimmingSpaces(Array(raw.prefix(8192))[...])
        if line.isEmpty {
            // Once per response: a blank line after trailers (of a chunked body) ends nothing new.
            guard status >= 200 && !complete else { return false }
            complete = true
            return true
        }
        if line.starts(with: "HTTP/".utf8) {
            let parts = line.split(separator: UInt8(ascii: " "), maxSplits: 2)
            let code = parts.count > 1 ? ResponseHead.decimal(String(decoding: parts[1], as: UTF8.self)).map { Int(clamping: $0) } ?? 0 : 0
            if code >= 100 && code < 200 { return false }
            let sha = sha256
            self = ResponseHead()
            sha256 = sha
            status = code
            statusText = ResponseHead.text(Array(parts.dropFirst().joined(separator: [UInt8(ascii: " ")])), maxBytes: 200)
            return false
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return false }
        let name = ResponseHead.text(ResponseHead.asciiLowercased(line[..<colon]), maxBytes: 8192)
        let value = ResponseHead.text(Array(ResponseHead.trimmingSpaces(line[(colon + 1)...])), maxBytes: 8192)
        switch name {
        case "content-length": contentLength = ResponseHead.decimal(value)
        case "content-range": range = ContentRange(value)
        case "etag", "x-linked-etag": if let hex = ResponseHead.sha256(etag: value) { sha256 = hex }
        case "content-encoding":
            let v = ResponseHead.text(ResponseHead.asciiLowercased(value.utf8), maxBytes: 100)
            contentEncoding = v.isEmpty || v == "identity" ? nil : v
        default: break
        }
        return false
    }

    private static func asciiLowercased(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        bytes.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
    }

    private static func trimmingSpaces(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        func space(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0D || c == 0x0A }
        guard let first = bytes.firstIndex(where: { !space($0) }), let last = bytes.lastIndex(where: { !space($0) }) else { return [] }
        return bytes[first...last]
    }

    /// The text of `bytes` in at most `maxBytes` bytes of UTF-8, whole code points. Decoded first: an
    /// invalid byte becomes U+FFFD, three bytes.
    private static func text(_ bytes: [UInt8], maxBytes: Int) -> String {
        var out = String.UnicodeScalarView()
        var n = 0
        for c in String(decoding: bytes, as: UTF8.self).unicodeScalars {
            n += UTF8.width(c)
            if n > maxBytes { break }
            out.append(c)
        }
        return String(out)
    }

    /// The SHA-256 an ETag carries: `"<64 hex digits>"`, optionally weak (`W/`); nil for any other tag.
    package static func sha256(etag value: String) -> String? {
        var v = Substring(value)
        if v.hasPrefix("W/") { v = v.dropFirst(2) }
        if v.count >= 2 && v.first == "\"" && v.last == "\"" { v = v.dropFirst().dropLast() }
        let lower = v.lowercased()
        guard lower.utf8.count == 64, lower.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else {
            return nil
        }
        return lower
    }

    /// A size or offset: decimal digits only (no sign, no spaces), nil when not one or past Int64.
    package static func decimal<S: StringProtocol>(_ s: S) -> Int64? {
        guard !s.isEmpty, s.utf8.count <= 19, s.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int64(s)
    }
}

/// `Content-Range: bytes first-last/total`, `bytes first-last/*` or `bytes */total` (RFC 9110 §14.4);
/// nil for anything else, including a last before the first or a total not past the last.
package struct ContentRange: Equatable, Sendable {
    package var first: Int64?
    package var last: Int64?
    package var total: Int64?

    package init(first: Int64?, last: Int64?, total: Int64?) {
        self.first = first
        self.last = last
        self.total = total
    }

    package init?(_ value: String) {
        guard value.utf8.count > 6, value.prefix(6).lowercased() == "bytes " else { return nil }
        let halves = value.dropFirst(6).split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        let spec = halves[0].trimmingCharacters(), size = halves[1].trimmingCharacters()
        if size == "*" {
            total = nil
        } else {
            guard let t = ResponseHead.decimal(size) else { return nil }
            total = t
        }
        if spec == "*" {
            // An unsatisfied range states the size alone.
            guard total != nil else { return nil }
            return
        }
        let ends = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard ends.count == 2, let a = ResponseHead.decimal(ends[0]), let b = ResponseHead.decimal(ends[1]), a <= b else { return nil }
        if let total, b >= total { return nil }
        first = a
        last = b
    }
}

extension Substring {
    fileprivate func trimmingCharacters() -> String { String(self).trimmingSpaces() }
}

extension String {
    /// Without leading and trailing spaces, tabs, CRs and LFs.
    package func trimmingSpaces() -> String {
        let bytes = Array(utf8)
        var start = 0, end = bytes.count
        func space(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0D || c == 0x0A }
        while start < end && space(bytes[start]) { start += 1 }
        while end > start && space(bytes[end - 1]) { end -= 1 }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }
}
