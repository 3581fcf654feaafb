import Glibc
import LeapBundles
import LeapCore
import LeapDownload
import LeapGGUF

// What each file of a bundle must look like before it is renamed into the cache, or used from it: a cheap
// look at its contents that a body which is not the file fails (an error page sent as 200, a compressed
// body, zeros). The model and its companions start with the GGUF magic; a chat template is UTF-8 text
// of at most a manifest's size. A file that passes but that the load then refuses (cut short by a server
// that gave no length) is dropped by `dropRefusedFiles`, so that the next load downloads it again.
enum BundleFileChecks {
    /// The check for the file under manifest key `key`.
    static func check(forKey key: String) -> FileCheck {
        key == "chat_template" ? text : gguf
    }

    static let gguf: FileCheck = { fd, size in
        guard size > 0 else { return "it is empty" }
        var head = [UInt8](repeating: 0, count: 8)
        let n = head.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return "it cannot be read: \(String(cString: strerror(errno)))" }
        if head.prefix(n).starts(with: Array("GGUF".utf8)) && n >= 4 { return nil }
        let hex = head.prefix(n).map { b in (b < 16 ? "0" : "") + String(b, radix: 16, uppercase: true) }.joined(separator: " ")
        let hint = head.starts(with: [0x1F, 0x8B]) ? " (gzip-compressed)" : head.prefix(n).allSatisfy { $0 == 0 } ? " (zeros)" : ""
        return "it is not a GGUF file: it starts with \(hex)\(hint), not \"GGUF\""
    }

    static let text: FileCheck = { fd, size in
        guard size <= Int64(BundleManifest.maxBytes) else { return "a chat template of \(size) bytes is larger than \(BundleManifest.maxBytes)" }
        var bytes = [UInt8](repeating: 0, count: Int(size))
        let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard n == Int(size) else { return "it cannot be read: \(String(cString: strerror(errno)))" }
        guard String(validating: bytes, as: UTF8.self) != nil, !bytes.contains(0) else { return "a chat template must be UTF-8 text" }
        return nil
    }

    /// After a load refused the bundle: every cached file of it that no manifest SHA-256 vouches for and
    /// that is not a well-formed GGUF file is removed (with its record), so that the next load downloads it
    /// again instead of failing on it for good.
    static func dropRefusedFiles(_ files: BundleFiles) {
        for path in files.unpinnedCacheFiles {
            do {
                _ = try GGUFFile(path: path)
            } catch let e as LeapError where e.kind == .format {
                Log.warning("'\(path)' is removed from the download cache: \(e.message)")
                unlink(path)
                CachedFile.removeRecord(for: path)
            } catch {}
        }
    }
}
