import Glibc
import LeapCore
import LeapJSON
import LeapMessages
import Testing

/// Tests/Fixtures/<area>, found from this file's location.
func fixturesDir(_ area: String) -> String {
    var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast(2)  // LeapToolCallsTests/Support.swift
    return parts.joined(separator: "/") + "/Fixtures/" + area
}

func readText(_ path: String) -> String? {
    guard let f = fopen(path, "rb") else { return nil }
    defer { fclose(f) }
    var bytes: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = fread(&buf, 1, buf.count, f)
        if n <= 0 { break }
        bytes.append(contentsOf: buf[0..<n])
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// A fixture file of Tests/Fixtures/toolcalls as JSON.
func fixture(_ name: String) throws -> JSONValue {
    let text = try #require(readText(fixturesDir("toolcalls") + "/" + name), "missing fixture \(name)")
    return try JSONParser.parse(text)
}

func calls(from v: JSONValue?) throws -> [LeapFunctionCall] {
    let items = try #require(v?.arrayValue)
    return try items.enumerated().map { i, c in try LeapFunctionCall.fromJSON(c, path: "calls[\(i)]") }
}

func call(_ name: String, _ args: [(String, JSONValue)] = []) -> LeapFunctionCall {
    LeapFunctionCall(name: name, arguments: JSONObject(args))
}

/// The error a throwing expression gives (nil if it does not throw).
func thrownError(_ body: () throws -> Any) -> LeapError? {
    do {
        _ = try body()
        return nil
    } catch let e as LeapError {
        return e
    } catch {
        return LeapError(.internal, "unexpected error type \(error)")
    }
}

/// Calls with their (top-level) arguments sorted by name, as the LFM dump writes them.
func sortedArguments(_ calls: [LeapFunctionCall]) -> [LeapFunctionCall] {
    calls.map { c in
        LeapFunctionCall(name: c.name, arguments: JSONObject(c.arguments.entries
            .sorted { $0.key.unicodeScalars.lexicographicallyPrecedes($1.key.unicodeScalars) }
            .map { ($0.key, $0.value) }))
    }
}
