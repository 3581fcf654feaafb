import LeapDownload
import Testing

/// The header parsing of downloads, on lines written by hand from RFC 9110's forms.
@Suite struct ResponseHeadTests {
    func head(_ lines: [String]) -> (ResponseHead, ended: [Bool]) {
        var h = ResponseHead()
        let ended = lines.map { h.add(line: Array(($0 + "\r\n").utf8)) }
        return (h, ended)
    }

    @Test func contentRangeForms() {
        #expect(ContentRange("bytes 100-199/200") == ContentRange(first: 100, last: 199, total: 200))
        #expect(ContentRange("BYTES 0-0/1") == ContentRange(first: 0, last: 0, total: 1))
        #expect(ContentRange("bytes 5-9/*") == ContentRange(first: 5, last: 9, total: nil))
        #expect(ContentRange("bytes */1234") == ContentRange(first: nil, last: nil, total: 1234))
        // Not ranges: reversed, past the total, signs, missing parts, another unit, overflow.
        for bad in ["bytes 9-5/10", "bytes 0-10/10", "bytes -1-5/10", "bytes 1-5", "bytes */*", "items 1-2/3",
                    "bytes 1-+5/10", "bytes 0-1/99999999999999999999", "bytes  /", "bytes 1 - 2/3", ""] {
            #expect(ContentRange(bad) == nil, "\(bad)")
        }
    }

    @Test func etagCarriesASHA256OnlyWhenItIsOne() {
        let hex = String(repeating: "ab", count: 32)
        #expect(ResponseHead.sha256(etag: "\"\(hex.uppercased())\"") == hex)
        #expect(ResponseHead.sha256(etag: "W/\"\(hex)\"") == hex)
        #expect(ResponseHead.sha256(etag: hex) == hex)
        #expect(ResponseHead.sha256(etag: "\"\(hex.dropLast())\"") == nil)
        #expect(ResponseHead.sha256(etag: "\"\(hex.dropLast())g\"") == nil)
        #expect(ResponseHead.sha256(etag: "\"" + hex) == nil, "an unbalanced quote is not stripped")
    }

    @Test func aRedirectThenTheFile() {
        let sha = String(repeating: "0f", count: 32)
        let (h, ended) = head(["HTTP/1.1 302 Found", "X-Linked-ETag: \"\(sha)\"", "Content-Length: 0", "",
                               "HTTP/1.1 100 Continue", "",
                               "HTTP/1.1 206 Partial Content", "content-length:  100 ", "Content-Range: bytes 100-199/200",
                               "Content-Encoding: identity", ""])
        #expect(ended == [false, false, false, true, false, false, false, false, false, false, true])
        #expect(h.status == 206 && h.statusText == "206 Partial Content")
        #expect(h.contentLength == 100 && h.range == ContentRange(first: 100, last: 199, total: 200))
        #expect(h.sha256 == sha, "the redirect's checksum is kept for the file")
        #expect(h.contentEncoding == nil)
        let (g, _) = head(["HTTP/2 200", "Content-Length: -5", "Content-Encoding: GZip", ""])
        #expect(g.status == 200 && g.contentLength == nil && g.contentEncoding == "gzip")
        let (n, _) = head(["HTTP/1.1 99999999999999999999999 Huge", "Content-Length: 18446744073709551615", ""])
        #expect(n.status == 0 && n.contentLength == nil)
    }

    /// Lines are bytes: a combining mark after the status line's first space does not hide the space (the
    /// code is the word after it, here not one), a field name is ASCII (the Kelvin sign is not "k", though
    /// Unicode lowercases it so), and the status text keeps at most 200 bytes however it is spelt.
    @Test func linesAreReadAsBytes() {
        let (a, _) = head(["HTTP/1.1 \u{301}x 200 OK", ""])
        #expect(a.status == 0)
        let sha = String(repeating: "0f", count: 32)
        let (b, _) = head(["HTTP/1.1 200 OK", "X-Lin\u{212A}ed-ETag: \"\(sha)\"", ""])
        #expect(b.status == 200 && b.sha256 == nil)
        // "404 a" and 300 combining marks (two bytes each) are 5 Characters; 200 bytes end inside a mark.
        let (c, _) = head(["HTTP/1.1 404 a" + String(repeating: "\u{301}", count: 300), ""])
        #expect(c.status == 404 && c.statusText.utf8.starts(with: "404 a\u{301}".utf8))
        #expect(c.statusText.utf8.count == 199, "whole code points within 200 bytes")
        let (d, _) = head(["HTTP/1.1 200 OK", "Content-Encoding: x" + String(repeating: "\u{1F600}", count: 50), ""])
        #expect(d.contentEncoding?.utf8.count == 97)
        // Invalid UTF-8 decodes to U+FFFD, three bytes each: the cap holds for the decoded text.
        var e = ResponseHead()
        e.add(line: Array("HTTP/1.1 500 ".utf8) + [UInt8](repeating: 0xFF, count: 300))
        #expect(e.status == 500 && e.statusText.utf8.count == 199)   // "500 " and 65 of them
    }

    @Test func redirectsFromHTTPSStayOnHTTPS() {
        #expect(Downloader.redirectProtocols(from: "https://huggingface.co/x") == CurlLibrary.protocolHTTPS)
        #expect(Downloader.redirectProtocols(from: "HTTPS://h/x") == CurlLibrary.protocolHTTPS)
        #expect(Downloader.redirectProtocols(from: "http://h/x") == CurlLibrary.protocolHTTP | CurlLibrary.protocolHTTPS)
    }

    @Test func verificationRecordsParseOnlyTheirOwnForm() {
        let r = VerificationRecord(device: 2049, inode: 7, size: 1 << 30, modifiedSeconds: 1_700_000_000,
                                   modifiedNanoseconds: 5, sha256: String(repeating: "e3", count: 32))
        #expect(String(decoding: r.encoded, as: UTF8.self) == "leap-verified 1 2049 7 1073741824 1700000000 5 \(String(repeating: "e3", count: 32))\n")
        #expect(VerificationRecord(parsing: r.encoded) == r)
        for bad in ["leap-verified 1 2049 7 1073741824 1700000000 05 \(String(repeating: "e3", count: 32))\n",
                    "leap-verified 2 2049 7 1073741824 1700000000 5 \(String(repeating: "e3", count: 32))\n",
                    "leap-verified 1 2049 7 1073741824 1700000000 1000000000 \(String(repeating: "e3", count: 32))\n",
                    "leap-verified 1 2049 7 1073741824 1700000000 5 \(String(repeating: "E3", count: 32))\n",
                    "leap-verified 1 2049 7 1073741824 1700000000 5 \(String(repeating: "e3", count: 32))",
                    "leap-verified 1 2049 7 -1 1700000000 5 \(String(repeating: "e3", count: 32))\n"] {
            #expect(VerificationRecord(parsing: Array(bad.utf8)) == nil, "\(bad)")
        }
    }
}
