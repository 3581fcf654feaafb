// The peers' helper scripts: the Python that runs them and the `key: value` figures they print.
import Glibc

/// The Python that runs the helper scripts: llama-cpp-python (with its mtmd bindings) for the comparisons,
/// numpy and gguf to write the random-weight files. $LEAP_LLAMA_PYTHON, else python3.
var llamaPython: String {
    getenv("LEAP_LLAMA_PYTHON").map { String(cString: $0) } ?? "python3"
}

/// scripts/<name> of this repository.
func repoScript(_ name: String) -> String {
    var dir = String(#filePath).split(separator: "/", omittingEmptySubsequences: false)
    dir.removeLast(3)
    return dir.joined(separator: "/") + "/scripts/" + name
}

/// The `key: value` lines of a command's output (stderr is the caller's to redirect).
func keyValues(_ cmd: String) -> [String: Double] {
    guard let p = popen(cmd, "r") else { return [:] }
    var out: [String: Double] = [:]
    var line = [CChar](repeating: 0, count: 512)
    while fgets(&line, 512, p) != nil {
        let s = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let kv = s.split(separator: ":", maxSplits: 1)
        if kv.count == 2, let v = Double(kv[1].filter { $0 != " " && $0 != "\n" }) { out[String(kv[0])] = v }
    }
    pclose(p)
    return out
}
