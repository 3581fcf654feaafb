// The files the benchmarks read: vocabularies, templates, token ids, prompt sets.
import Glibc

/// A file's bytes, or nil when it cannot be opened or read.
func readFile(_ path: String) -> [UInt8]? {
    guard let f = fopen(path, "rb") else { return nil }
    defer { fclose(f) }
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let n = fread(&buf, 1, buf.count, f)
        if n <= 0 { break }
        out += buf[0..<n]
    }
    return ferror(f) == 0 ? out : nil
}
