import Glibc
import LeapCore
import LeapGGUF
import LeapModels
import LeapPromptCache
import LeapTestFiles

let modelFixturesDir = fixturesDir("models")

func loadTinyFile(_ name: String) throws -> (GGUFFile, LanguageModel) {
    let file = try GGUFFile(path: modelFixturesDir + "/" + name + ".gguf")
    return (file, try LanguageModel.load(file: file, threads: 2))
}

/// A fresh empty folder under /tmp.
func temporaryFolder(_ tag: String) -> String {
    var template = Array("/tmp/leap-\(tag)-XXXXXX".utf8CString)
    let made = template.withUnsafeMutableBufferPointer { buf -> String? in
        guard let base = buf.baseAddress, mkdtemp(base) != nil else { return nil }
        return String(cString: base)
    }
    return made ?? "/tmp/leap-\(tag)-\(getpid())"
}

func removeTree(_ path: String) {
    guard let dir = opendir(path) else { return }
    var names: [String] = []
    while let e = readdir(dir) {
        let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        if name != "." && name != ".." { names.append(name) }
    }
    closedir(dir)
    for n in names {
        let p = path + "/" + n
        var st = stat()
        if lstat(p, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR { removeTree(p) } else { unlink(p) }
    }
    rmdir(path)
}

func fileNames(in path: String) -> [String] {
    guard let dir = opendir(path) else { return [] }
    defer { closedir(dir) }
    var names: [String] = []
    while let e = readdir(dir) {
        let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        if name != "." && name != ".." { names.append(name) }
    }
    return names.sorted()
}

/// Deterministic token ids in 0..<vocab (a linear congruential sequence).
func tokens(_ n: Int, seed: UInt64, vocab: Int) -> [Int32] {
    var s = seed
    return (0..<n).map { _ in
        s = s &* 6364136223846793005 &+ 1442695040888963407
        return Int32((s >> 33) % UInt64(vocab))
    }
}

func bitsEqual(_ a: UnsafeBufferPointer<Float>, _ b: UnsafeBufferPointer<Float>) -> Bool {
    a.count == b.count && zip(a, b).allSatisfy { $0.bitPattern == $1.bitPattern }
}

func relativeRMS(_ a: [Float], _ ref: [Float]) -> Double {
    var e = 0.0, n = 0.0
    for (x, y) in zip(a, ref) { e += Double(x - y) * Double(x - y); n += Double(y) * Double(y) }
    return (e / max(n, 1e-30)).squareRoot()
}
