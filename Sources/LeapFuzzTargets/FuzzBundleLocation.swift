import LeapBundles
import LeapCore

/// Manifest locations (BundleLocation.swift): the first line of the input as what a caller gives, the
/// rest as a manifest entry resolved against it and against fixed URL and path manifests. An entry
/// resolved against a URL is an http(s) URL with an absolute path, on the manifest's origin unless it is an
/// absolute URL itself; an entry of plain segments is its own path, or
/// (relative) lands in the manifest's folder.
package let fuzzBundleLocation: FuzzTarget = (
    seeds: [
        Array("https://huggingface.co/LiquidAI/LFM2-1.2B-GGUF/resolve/main/Q4_K_M.json\n../../x/./y/../model.gguf?download=1#f".utf8),
        Array("file://localhost/m%20x/Q8_0.json\n/abs/template.jinja".utf8),
        Array("models/M-GGUF/leap/Q4_0.json\nhttp://[::1]:8080/a/%2e%2e/b.gguf".utf8),
        Array("ftp://h/x.json\nfile:///etc/passwd".utf8),
    ],
    run: { bytes in
        let parts = bytes.split(separator: 0x0A, maxSplits: 1, omittingEmptySubsequences: false)
        let given = String(decoding: parts[0], as: UTF8.self)
        let ref = parts.count > 1 ? String(decoding: parts[1], as: UTF8.self) : given
        var bases = [BundleLocation.url("https://h.test/org/Model-GGUF/Q4_0.json"), .path("models/Model-GGUF/Q4_0.json")]
        if let source = try? BundleLocation.source(given) { bases.append(source) }
        let absolute = BundleLocation.scheme(of: ref) != nil
        for base in bases {
            guard let resolved = try? base.resolve(ref), case .url(let manifest) = base else { continue }
            guard case .url(let url) = resolved else {
                fuzzFailure("'\(ref)' resolved to a local path against the URL manifest '\(manifest)'")
            }
            let scheme = BundleLocation.scheme(of: url)
            if scheme != "http" && scheme != "https" { fuzzFailure("'\(ref)' resolved to '\(url)', not an http(s) URL") }
            let (origin, path) = BundleLocation.split(url)
            // Bytes: Swift's String == is canonical equivalence, and a Character "/" misses "/" + a mark.
            if !absolute && !origin.utf8.elementsEqual(BundleLocation.split(manifest).origin.utf8) {
                fuzzFailure("relative '\(ref)' left the origin of '\(manifest)': '\(url)'")
            }
            if path.utf8.first != UInt8(ascii: "/") { fuzzFailure("'\(ref)' resolved to '\(url)', whose path is not absolute") }
            // A path of plain segments is itself; relative, it lands in the folder of a plain manifest path.
            let manifestPath = Array(BundleLocation.split(manifest).path.utf8), refBytes = Array(ref.utf8)
            if !absolute && plainSegments(refBytes) {
                if refBytes.first == UInt8(ascii: "/") {
                    if !path.utf8.elementsEqual(refBytes) { fuzzFailure("the path '\(ref)' resolved to '\(url)'") }
                } else if plainSegments(manifestPath) {
                    let folder = manifestPath[...(manifestPath.lastIndex(of: UInt8(ascii: "/")) ?? 0)]
                    if !path.utf8.elementsEqual(folder + refBytes) {
                        fuzzFailure("'\(ref)' resolved against '\(manifest)' to '\(url)', not in the manifest's folder")
                    }
                }
            }
        }
    }
)

/// No "." or ".." segment, no query or fragment, no byte a URL check refuses (bytes: a "/" followed by a
/// combining mark still ends a segment).
private func plainSegments(_ u: [UInt8]) -> Bool {
    !u.isEmpty && !u.contains { $0 <= 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
        && !u.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).contains { $0.elementsEqual(".".utf8) || $0.elementsEqual("..".utf8) }
}
