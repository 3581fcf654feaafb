// BundleCache: where the downloaded files of a bundle go. As LEAP's LeapDownloader does, every bundle has
// its own folder named after the manifest, `{model}-{quant}` (LeapBundles publishes
// `<Model>-GGUF/<Quant>.json`, sometimes `<Model>-GGUF/leap/<Quant>.json`), and each file keeps the last
// segment of its URL as its name. A manifest downloaded from a URL adds the origin it came from,
// `{model}-{quant}@{scheme}-{host}`: two servers with the same path layout (or one reached over http and
// https) never share a folder, so a file one of them put there is never found by the other's manifest.
import Glibc
import LeapCore

package enum BundleCache {
    /// The cache root when the caller gives none: $LEAP_CACHE_DIR, else $XDG_CACHE_HOME/leap, else
    /// $HOME/.cache/leap.
    package static func defaultDirectory() throws -> String {
        func env(_ name: String) -> String? {
            guard let v = getenv(name) else { return nil }
            let s = String(cString: v)
            return s.isEmpty ? nil : s
        }
        if let d = env("LEAP_CACHE_DIR") { return d }
        if let d = env("XDG_CACHE_HOME") { return d + "/leap" }
        if let d = env("HOME") { return d + "/.cache/leap" }
        throw LeapError.invalidArgument("no cache folder for downloads: give one, or set LEAP_CACHE_DIR (HOME is not set either)")
    }

    /// The folder of the manifest at `source`: `{model}-{quant}`, plus `@{scheme}-{host}` for a URL. quant
    /// is the manifest's file name without `.json`, model the nearest enclosing folder other than `leap`,
    /// without a `-GGUF` suffix (".../LFM2-1.2B-GGUF/Q4_K_M.json" -> "LFM2-1.2B-Q4_K_M"); characters
    /// outside [A-Za-z0-9._+-] become "_". The host is the URL's, lowercase, with its port and without
    /// any user name; bytes other than [a-z0-9.:[]-] are percent-encoded, so that two hosts never give one
    /// name ("@" appears nowhere else). At most 255 bytes (one file name).
    package static func folderName(forManifest source: BundleLocation) -> String {
        let path: String
        switch source {
        case .url(let u): path = BundleLocation.split(u).path
        case .path(let p): path = p
        }
        var segments = path.split(separator: "/").map(String.init)
        var quant = segments.popLast() ?? "bundle"
        if quant.lowercased().hasSuffix(".json") { quant.removeLast(5) }
        while let last = segments.last, last.lowercased() == "leap" || last == "." || last == ".." { segments.removeLast() }
        var model = segments.last ?? ""
        if model.uppercased().hasSuffix("-GGUF") { model.removeLast(5) }
        let name = model.isEmpty ? quant : model + "-" + quant
        let local = String(safeName(name.isEmpty ? "bundle" : name).prefix(150))
        guard case .url(let url) = source else { return local }
        return local + "@" + originName(url)
    }

    /// "`{scheme}-{host}`" of an http(s) URL, at most 100 bytes: a longer host keeps its first 60 bytes and
    /// a hash of the whole (the name stays unique).
    package static func originName(_ url: String) -> String {
        let (origin, _) = BundleLocation.split(url)
        let scheme = String((BundleLocation.scheme(of: origin) ?? "url").prefix(16))
        var authority = Substring(origin)
        if let sep = BundleLocation.separator(in: origin) { authority = origin[origin.utf8.index(sep, offsetBy: 3)...] }
        if let at = authority.utf8.lastIndex(of: UInt8(ascii: "@")) { authority = authority[authority.utf8.index(after: at)...] }
        var host = ""
        for c in authority.lowercased().utf8 {
            let kept = (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == UInt8(ascii: ".") || c == UInt8(ascii: "-")
                || c == UInt8(ascii: ":") || c == UInt8(ascii: "[") || c == UInt8(ascii: "]")
            host += kept ? String(UnicodeScalar(c)) : "%" + hexByte(c)
        }
        if host.utf8.count > 100 - scheme.utf8.count - 1 {
            host = String(host.prefix(60)) + "~" + SHA256.hex(SHA256.hash(Array(host.utf8))).prefix(16)
        }
        if host.isEmpty { host = "%" }
        return safeName(scheme) + "-" + host
    }

    private static func hexByte(_ c: UInt8) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        return String(decoding: [digits[Int(c >> 4)], digits[Int(c & 15)]], as: UTF8.self)
    }

    /// The cache file name of a file downloaded from `url`: the URL path's last segment, made safe.
    package static func fileName(forURL url: String) -> String {
        let path = BundleLocation.split(url).path
        let last = path.split(separator: "/").last.map(String.init) ?? ""
        return safeName(last.isEmpty || last == "." || last == ".." ? "download" : last)
    }

    /// `s` with every byte outside [A-Za-z0-9._+-] replaced by "_", and never a dot file (".", "..", ".x").
    package static func safeName(_ s: String) -> String {
        var bytes = s.utf8.map { c -> UInt8 in
            let ok = (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
                || c == UInt8(ascii: ".") || c == UInt8(ascii: "_") || c == UInt8(ascii: "-") || c == UInt8(ascii: "+")
            return ok ? c : UInt8(ascii: "_")
        }
        if bytes.first == UInt8(ascii: ".") { bytes[0] = UInt8(ascii: "_") }
        return String(decoding: bytes.prefix(200), as: UTF8.self)
    }
}
