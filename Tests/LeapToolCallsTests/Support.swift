import Glibc
import LeapCore
import LeapJSON
import LeapMessages
import LeapTestFiles
import Testing



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
