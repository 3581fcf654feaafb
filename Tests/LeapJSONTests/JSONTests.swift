import LeapCore
import LeapJSON
import LeapTestFiles
import Testing

@Suite struct JSONParserTests {
    @Test func parsesEveryValueKind() throws {
        let v = try JSONParser.parse(#" {"s":"a\"b\\c\/d\u00e9\ud83d\ude00","i":-42,"d":2.5e-3,"t":true,"f":false,"n":null,"a":[1,[2,{}]],"o":{}} "#)
        #expect(v["s"] == .string("a\"b\\c/dé😀"))
        #expect(v["i"] == .int(-42))
        #expect(v["d"] == .double(0.0025))
        #expect(v["t"] == .bool(true) && v["f"] == .bool(false) && v["n"] == .null)
        #expect(v["a"] == .array([.int(1), .array([.int(2), .object(JSONObject())])]))
        #expect(v.objectValue?.keys == ["s", "i", "d", "t", "f", "n", "a", "o"])
    }

    @Test func keepsKeyOrderAndIntegers() throws {
        let text = #"{"z":1,"a":2.0,"m":[10000000000,-0.5]}"#
        #expect(try JSONParser.parse(text).serialized() == text)
    }

    /// Keys and strings compare by code points, as Python's json does: "\u00e9" (é) and "e\u0301" (e and a
    /// combining acute) are canonically equivalent (Swift's String == calls them equal) but two keys.
    @Test func canonicallyEquivalentKeysAreDistinct() throws {
        let text = #"{"\u00e9":1,"e\u0301":2}"#
        let v = try JSONParser.parse(text)
        let o = try #require(v.objectValue)
        #expect(o.count == 2)
        #expect(o["\u{E9}"] == .int(1) && o["e\u{301}"] == .int(2))
        #expect(v.serialized(.python(ensureASCII: true)) == #"{"\u00e9": 1, "e\u0301": 2}"#)
        #expect(JSONValue.string("\u{E9}") != JSONValue.string("e\u{301}"))
        #expect(JSONObject([("\u{E9}", .int(1))]) != JSONObject([("e\u{301}", .int(1))]))
        // The Kelvin sign is canonically "K": still another key.
        #expect(JSONObject([("K", .int(1))])["\u{212A}"] == nil)
    }

    @Test func bigIntegersBecomeDoubles() throws {
        #expect(try JSONParser.parse("123456789012345678901234567890") == .double(1.2345678901234568e29))
        #expect(try JSONParser.parse("9223372036854775807") == .int(Int64.max))
    }

    @Test(arguments: [
        ("", "line 1, column 1: unexpected end of input"),
        ("{\"a\":1,}", "line 1, column 8: expected a string key, found '}'"),
        ("[1 2]", "line 1, column 4: expected ',' or ']' in array, found '2'"),
        ("{\"a\" 1}", "expected ':' after key \"a\""),
        ("\"abc", "line 1, column 1: unterminated string"),
        ("[01]", "leading zeros"),
        ("[1.]", "expected a digit after '.'"),
        ("[-]", "expected a digit after '-'"),
        ("{\"a\":1,\"a\":2}", "duplicate key \"a\""),
        ("\"\\x\"", "invalid escape '\\x'"),
        ("\"\\ud800\"", "unpaired surrogate"),
        ("\"a\u{01}\"", "control character 0x01"),
        ("tru", "expected a value"),
        ("[1]\n  x", "line 2, column 3: unexpected 'x' after the end"),
        ("1e999", "out of range"),
    ])
    func rejectsMalformedInputPrecisely(input: String, expected: String) {
        do {
            _ = try JSONParser.parse(input)
            Issue.record("accepted malformed JSON \(input)")
        } catch let e as LeapError {
            #expect(e.kind == .serialization)
            #expect(e.message.contains(expected), "message was: \(e.message)")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func rejectsInvalidUTF8() {
        #expect(throws: LeapError.self) { try JSONParser.parse(bytes: [0x22, 0xC3, 0x28, 0x22]) }
    }

    @Test func limitsNestingDepth() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        do {
            _ = try JSONParser.parse(deep)
            Issue.record("accepted 100000 levels")
        } catch let e as LeapError {
            #expect(e.message.contains("nesting deeper than"))
        } catch {
            Issue.record("unexpected error \(error)")
        }
        #expect((try? JSONParser.parse(String(repeating: "[", count: 500) + String(repeating: "]", count: 500))) != nil)
    }
}

@Suite struct JSONWriterTests {
    /// Every double formats exactly like Python's json.dumps (goldens from scripts/fixtures/make_json_goldens.py).
    @Test func doublesMatchPythonRepr() throws {
        let text = try #require(readText(fixturesDir("json") + "/doubles.txt"))
        var checked = 0
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            let bits = try #require(UInt64(parts[0], radix: 16))
            let d = Double(bitPattern: bits)
            #expect(JSONValue.double(d).serialized() == String(parts[1]), "bits \(parts[0])")
            checked += 1
        }
        #expect(checked > 500)
    }

    @Test func documentsMatchPythonDumps() throws {
        let text = try #require(readText(fixturesDir("json") + "/documents.txt"))
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var i = 0
        while i + 2 < lines.count {
            let v = try JSONParser.parse(lines[i])
            #expect(v.serialized(.python()) == lines[i + 1])
            let indented = lines[i + 2].replacingOccurrences("⏎", "\n")
            #expect(v.serialized(.python(indent: 2, sortKeys: true, ensureASCII: true)) == indented)
            i += 3
        }
        #expect(i >= 12)
    }

    /// Python's json.dumps writes non-finite floats as NaN / Infinity (allow_nan=True); templates' tojson
    /// relies on it. Expected text from `json.dumps([float('nan'), float('inf'), -float('inf'), 1.5])`.
    @Test func allowNaNMatchesPython() {
        let v = JSONValue.array([.double(.nan), .double(.infinity), .double(-.infinity), .double(1.5)])
        var options = JSONWriteOptions.python()
        options.allowNaN = true
        #expect(v.serialized(options) == "[NaN, Infinity, -Infinity, 1.5]")
        #expect(v.serialized(.python()) == "[null, null, null, 1.5]")
    }

    @Test func compactRoundTrip() throws {
        let v = JSONValue.object(JSONObject([
            ("text", .string("line1\nline2\t\"q\" \\ é 😀 \u{7F} \u{1F}")),
            ("n", .array([.int(0), .int(-7), .double(0.1), .double(-2.5e-8), .null, .bool(true)])),
        ]))
        #expect(try JSONParser.parse(v.serialized()) == v)
        #expect(try JSONParser.parse(v.serialized(.python(indent: 4, sortKeys: true, ensureASCII: true))).objectValue?.count == 2)
    }
}

extension String {
    func replacingOccurrences(_ a: String, _ b: String) -> String {
        self.split(separator: Character(a), omittingEmptySubsequences: false).joined(separator: b)
    }
}
