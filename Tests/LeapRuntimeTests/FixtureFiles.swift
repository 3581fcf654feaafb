import Glibc
import LeapCore

/// <repo>/Tests/Fixtures, found from this file's path.
let fixturesDir: String = {
    var parts = String(#filePath).split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast(2)  // LeapRuntimeTests/FixtureFiles.swift
    return parts.joined(separator: "/") + "/Fixtures"
}()

/// The bytes of a file (fixtures are small).
func fileBytes(_ path: String) throws -> [UInt8] {
    guard let f = fopen(path, "rb") else { throw LeapError(.io, "cannot open \(path)") }
    defer { fclose(f) }
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = fread(&buf, 1, buf.count, f)
        if n <= 0 { break }
        out += buf[0..<n]
    }
    return out
}
