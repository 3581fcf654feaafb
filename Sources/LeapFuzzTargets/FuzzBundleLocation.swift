import LeapBundles
import LeapCore

/// Manifest locations (BundleLocation.swift): the first line of the input as what a caller gives, the
/// rest as a manifest entry resolved against it and against fixed URL and path manifests. An entry
/// resolved against a URL is an http(s) URL with an absolute path, on the manifest's origin unless it is an
/// absolute URL itself.
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
            if !absolute && origin != BundleLocation.split(manifest).origin {
                fuzzFailure("relative '\(ref)' left the origin of '\(manifest)': '\(url)'")
            }
            if !path.hasPrefix("/") { fuzzFailure("'\(ref)' resolved to '\(url)', whose path is not absolute") }
        }
    }
)
