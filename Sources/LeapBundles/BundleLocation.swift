// BundleLocation: where a manifest or one of its files is — an http(s) URL or a local path — and how a
// manifest's entries resolve against the manifest's own location (as a browser resolves a link: against the
// manifest's URL; against its folder for a manifest read from a path).
import LeapCore

package enum BundleLocation: Equatable, Sendable, CustomStringConvertible {
    case url(String)
    case path(String)

    package var description: String {
        switch self {
        case .url(let u): return u
        case .path(let p): return p
        }
    }

    /// A manifest source as given by the caller: an http(s) URL, a `file://` URL, or a path.
    package static func source(_ s: String) throws -> BundleLocation {
        guard !s.isEmpty else { throw LeapError.invalidArgument("the bundle path or URL is empty") }
        if let scheme = scheme(of: s) {
            switch scheme {
            case "http", "https": return .url(try checkedURL(s))
            case "file": return .path(try filePath(s))
            default: throw LeapError.unsupported("'\(s)': the URL scheme \(scheme) is not supported (http, https, file and paths are)")
            }
        }
        return .path(s)
    }

    /// Entry `ref` of a manifest found at `self`. Paths are split on their bytes: a "/" followed by a
    /// combining mark is one Character, and not "/".
    package func resolve(_ ref: String) throws -> BundleLocation {
        if let scheme = BundleLocation.scheme(of: ref) {
            switch scheme {
            case "http", "https": return .url(try BundleLocation.checkedURL(ref))
            case "file":
                if case .url = self {
                    throw LeapError.unsupported("'\(ref)': a manifest downloaded from a URL cannot name a local file:// path")
                }
                return .path(try BundleLocation.filePath(ref))
            default: throw LeapError.unsupported("'\(ref)': the URL scheme \(scheme) is not supported (http, https, file and relative paths are)")
            }
        }
        let slash = UInt8(ascii: "/")
        let absolute = ref.utf8.first == slash
        // `location` up to and with its last "/" (nothing when it has none).
        func folder(_ location: String) -> String {
            let u = Array(location.utf8)
            return String(decoding: u[..<((u.lastIndex(of: slash) ?? -1) + 1)], as: UTF8.self)
        }
        switch self {
        case .path(let manifest):
            return .path(absolute ? ref : folder(manifest) + ref)
        case .url(let manifest):
            let (origin, path) = BundleLocation.split(manifest)   // path starts with "/"
            return .url(origin + BundleLocation.removingDotSegments(absolute ? ref : folder(path) + ref))
        }
    }

    /// The lowercase scheme of `s` when it starts with `scheme://`.
    package static func scheme(of s: String) -> String? {
        guard let r = separator(in: s) else { return nil }
        let name = s[..<r]
        guard let first = name.utf8.first, (first | 0x20) >= 0x61 && (first | 0x20) <= 0x7A,
              name.utf8.allSatisfy({ c in let l = c | 0x20; return (l >= 0x61 && l <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == 0x2B || c == 0x2D || c == 0x2E })
        else { return nil }
        return String(name.lowercased())
    }

    /// Where "://" starts in `s`.
    static func separator(in s: String) -> String.Index? {
        let u = s.utf8
        var i = u.startIndex
        while i != u.endIndex {
            if u[i] == UInt8(ascii: ":"), u[i...].starts(with: "://".utf8) { return i }
            i = u.index(after: i)
        }
        return nil
    }

    /// An http(s) URL with a host and no whitespace or control characters.
    static func checkedURL(_ s: String) throws -> String {
        guard !s.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else {
            throw LeapError.invalidArgument("'\(s)' is not a valid URL (it contains a space or control character)")
        }
        let (origin, _) = split(s)
        guard let sep = separator(in: origin), origin.utf8.count > origin.utf8.distance(from: origin.startIndex, to: sep) + 3 else {
            throw LeapError.invalidArgument("'\(s)' is not a valid URL (no host)")
        }
        return s
    }

    /// `file:///abs/path` or `file://localhost/abs/path` -> `/abs/path` (percent escapes decoded). Bytes:
    /// in "file://\u{301}/x" the mark is a host (so refused), though "/" and the mark are one Character.
    static func filePath(_ s: String) throws -> String {
        var rest = Array(s.utf8).dropFirst(7)   // "file://", any case (scheme(of:) said so)
        if rest.prefix(10).map({ $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }).elementsEqual("localhost/".utf8) { rest = rest.dropFirst(9) }
        guard rest.first == UInt8(ascii: "/") else { throw LeapError.invalidArgument("'\(s)': a file URL must name an absolute path (file:///...)") }
        return try percentDecoded(String(decoding: rest, as: UTF8.self), s)
    }

    private static func percentDecoded(_ s: String, _ whole: String) throws -> String {
        var out: [UInt8] = []
        var bytes = Array(s.utf8)[...]
        func hex(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: return c - 0x30
            case 0x41...0x46: return c - 0x41 + 10
            case 0x61...0x66: return c - 0x61 + 10
            default: return nil
            }
        }
        while let c = bytes.popFirst() {
            guard c == UInt8(ascii: "%") else { out.append(c); continue }
            guard bytes.count >= 2, let hi = hex(bytes[bytes.startIndex]), let lo = hex(bytes[bytes.startIndex + 1]), hi << 4 | lo != 0 else {
                throw LeapError.invalidArgument("'\(whole)': bad percent escape")
            }
            out.append(hi << 4 | lo)
            bytes = bytes.dropFirst(2)
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// "https://host:8080/a/b.json?x#y" -> ("https://host:8080", "/a/b.json"): the path without query or fragment.
    package static func split(_ url: String) -> (origin: String, path: String) {
        // Bytes, not Characters: a "/" followed by a combining mark is one Character, and not "/".
        let u = Array(url.utf8)
        let end = u.firstIndex(where: { $0 == UInt8(ascii: "#") || $0 == UInt8(ascii: "?") }) ?? u.count
        let text = { (from: Int, to: Int) in String(decoding: u[from..<to], as: UTF8.self) }
        guard let sep = (0..<max(0, end - 2)).first(where: { u[$0] == UInt8(ascii: ":") && u[$0 + 1] == UInt8(ascii: "/") && u[$0 + 2] == UInt8(ascii: "/") }),
              let slash = u[(sep + 3)..<end].firstIndex(of: UInt8(ascii: "/")) else { return (text(0, end), "/") }
        return (text(0, slash), text(slash, end))
    }

    /// RFC 3986 §5.2.4 on an absolute path: "/a/b/../c/./d" -> "/a/c/d" (never above the root). A query
    /// or fragment on the last segment is kept as written. Segments are split on bytes ("/" followed by a
    /// combining mark is one Character, and not "/").
    package static func removingDotSegments(_ path: String) -> String {
        var out: [ArraySlice<UInt8>] = []
        let parts = Array(path.utf8).split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst()
        for (i, part) in parts.enumerated() {
            let last = i == parts.count - 1
            if part.elementsEqual(".".utf8) {
                if last { out.append([]) }
            } else if part.elementsEqual("..".utf8) {
                if !out.isEmpty { out.removeLast() }
                if last { out.append([]) }
            } else {
                out.append(part)
            }
        }
        return "/" + String(decoding: Array(out.joined(separator: [UInt8(ascii: "/")])), as: UTF8.self)
    }
}
