import LeapBundles
import LeapDownload

/// Cache folder and file names (BundleCache.swift) and the records of verified files (CachedFile.swift).
/// Any input as a manifest path, a URL host and a URL path: every name is one safe file name (not empty,
/// at most 255 bytes, no "/", no NUL, no dot file); two different hosts never share a folder. Any input as
/// a record: one that parses re-encodes to the same bytes.
package let fuzzBundleCache: FuzzTarget = (
    seeds: [
        Array("LiquidAI/LFM2-1.2B-GGUF/Q4_K_M.json\nhuggingface.co\nHuggingFace.co:443".utf8),
        Array("../leap/./..\nuser:pw@[::1]:8080\n%41%2F.".utf8),
        [0xCD, 0x9E, 0x6F, 0x6E, 0x4B, 0x56, 0x9B, 0x98, 0x40, 0xF5, 0x9E, 0x9D, 0xBD, 0x35, 0xC8, 0x62],   // a combining mark after "/"
        Array("leap-verified 1 2049 1234567 1048576 1700000000 999999999 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n".utf8),
    ],
    run: { bytes in
        if let record = VerificationRecord(parsing: bytes), record.encoded != bytes {
            fuzzFailure("the record \(record) re-encodes to other bytes")
        }
        let parts = bytes.split(separator: 0x0A, maxSplits: 2, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        let path = parts[0], host = parts.count > 1 ? parts[1] : "h", other = parts.count > 2 ? parts[2] : "h2"
        checkName(BundleCache.folderName(forManifest: .path(path)), path)
        checkName(BundleCache.fileName(forURL: "https://h/" + path), path)
        if !path.isEmpty { checkName(BundleCache.safeName(path), path) }
        let a = BundleCache.folderName(forManifest: .url("https://" + host + "/" + path))
        let b = BundleCache.folderName(forManifest: .url("https://" + other + "/" + path))
        checkName(a, host)
        checkName(b, other)
        if a == b && authority(host) != authority(other) {
            fuzzFailure("the hosts '\(host)' and '\(other)' share the cache folder '\(a)'")
        }
        if BundleCache.folderName(forManifest: .url("http://" + host + "/" + path)) == a {
            fuzzFailure("http and https share the cache folder '\(a)'")
        }
    }
)

/// The host (and port) a URL "https://{s}/..." names, as the folder name sees it: lowercase, without a
/// user name, up to the first "/", "?" or "#".
private func authority(_ s: String) -> String {
    var a = Array(s.lowercased().utf8)   // bytes: "/" and a combining mark after it are one Character
    if let end = a.firstIndex(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) { a = Array(a[..<end]) }
    if let at = a.lastIndex(of: UInt8(ascii: "@")) { a = Array(a[(at + 1)...]) }
    return String(decoding: a, as: UTF8.self)
}

private func checkName(_ name: String, _ input: String) {
    if name.isEmpty || name.utf8.count > 255 || name.contains("/") || name.utf8.contains(0) || name.hasPrefix(".") {
        fuzzFailure("unsafe cache name '\(name)' for '\(input)'")
    }
}
