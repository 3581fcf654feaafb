import LeapCore
import LeapJSON
import LeapMessages
import LeapToolCalls
import Testing

@Suite struct LFMParserGoldenTests {
    let lfm = LFMFunctionCallParser()

    /// Every body of the corpus (hand-written edge cases + seeded random calls written with Python's
    /// repr) parses to what Python's ast.literal_eval says.
    @Test func pythonicCorpusMatchesPython() throws {
        let cases = try #require(try fixture("pythonic.json").arrayValue)
        #expect(cases.count > 150)
        for c in cases {
            let body = try #require(c["body"]?.stringValue)
            let expected = try calls(from: c["calls"])
            let parsed: [LeapFunctionCall]
            do { parsed = try lfm.parse(body) } catch {
                Issue.record("\(error) for body \(body)")
                continue
            }
            #expect(parsed == expected, "body: \(body)")
        }
    }

    @Test func jsonVariantMatchesJSONLoads() throws {
        for c in try #require(try fixture("json_calls.json").arrayValue) {
            let body = try #require(c["body"]?.stringValue)
            #expect(try lfm.parse(body) == (try calls(from: c["calls"])), "body: \(body)")
        }
    }

    /// The LFM2.5-8B-A1B template renders past calls with single quotes and str() values; the parser
    /// reads that rendering back.
    @Test func readsTheLFM25TemplateRendering() throws {
        for c in try #require(try fixture("template_lfm.json").arrayValue) {
            let body = try #require(c["body"]?.stringValue)
            #expect(try lfm.parse(body) == (try calls(from: c["calls"])), "body: \(body)")
        }
    }

    /// Bodies Python rejects give a functionCallParsing error that quotes the text, never a crash.
    @Test func invalidCorpusIsRejected() throws {
        for c in try #require(try fixture("invalid.json").arrayValue) {
            let body = try #require(c.stringValue)
            let error = thrownError { try lfm.parse(body) }
            #expect(error?.kind == .functionCallParsing, "body: \(body) gave \(String(describing: error))")
            #expect(error?.message.contains("at offset") == true)
        }
    }

    @Test func dumpMatchesTheDocumentedFormats() throws {
        for c in try #require(try fixture("dump.json").arrayValue) {
            let given = try calls(from: c["calls"])
            #expect(lfm.dump(given) == c["lfm"]?.stringValue)
            #expect(HermesFunctionCallParser().dump(given) == c["hermes"]?.stringValue)
        }
    }

    /// dump then parse gives the calls back (arguments sorted), for every call of the corpus.
    @Test func dumpParseRoundTrip() throws {
        for c in try #require(try fixture("pythonic.json").arrayValue) + (try #require(try fixture("dump.json").arrayValue)) {
            let original = try calls(from: c["calls"])
            if original.isEmpty { continue }
            let lfmText = lfm.dump(original)
            #expect(try lfm.parseText(lfmText) == sortedArguments(original), "dump: \(lfmText)")
            let hermes = HermesFunctionCallParser()
            #expect(try hermes.parseText(hermes.dump(original)) == original)
        }
    }

    /// A string argument holding a parser's own markers is dumped with them escaped, so that neither
    /// `parseText` nor the response router ends the block inside the string.
    @Test func markersInsideStringsSurviveTheRoundTrip() throws {
        let markers = "a <|tool_call_end|> b </tool_call> c <|tool_call_start|> d <tool_call> e \\<|tool_call_end|>"
        let call = LeapFunctionCall(name: "f", arguments: JSONObject([("s", .string(markers)), ("o", .object(JSONObject([(markers, .int(1))])))]))
        for parser in [lfm, HermesFunctionCallParser()] as [any FunctionCallParser] {
            let dumped = parser.dump([call])
            let inner = dumped.dropFirst(parser.startMarker.count).dropLast(parser.endMarker.count)
            #expect(!inner.contains(parser.endMarker) && !inner.contains(parser.startMarker), "dump: \(dumped)")
            #expect(try sortedArguments(parser.parseText(dumped)) == sortedArguments([call]), "dump: \(dumped)")
            var router = ResponseStreamProcessor(options: ResponseStreamOptions(functionCallParser: parser))
            var emitted: [LeapFunctionCall] = []
            for byte in dumped.utf8 {
                for case .functionCalls(let c) in router.feed([byte], isSpecial: false) { emitted += c }
            }
            for case .functionCalls(let c) in router.finish().events { emitted += c }
            #expect(sortedArguments(emitted) == sortedArguments([call]), "dump: \(dumped)")
        }
    }

    /// A marker that shares a Character with what touches it (a combining mark or a ZWJ after its ">", a
    /// prepended mark before its "<") is still a marker to `parseText` and the router, which cut on bytes:
    /// the dump escapes it all the same.
    @Test func markersSharingACharacterAreEscaped() throws {
        for text in ["</tool_call>\u{301}", "<|tool_call_end|>\u{200D}x", "\u{600}<tool_call>", "\u{600}<|tool_call_start|>"] {
            let call = LeapFunctionCall(name: "f", arguments: JSONObject([("s", .string(text))]))
            for parser in [lfm, HermesFunctionCallParser()] as [any FunctionCallParser] {
                let dumped = Array(parser.dump([call]).utf8)
                let inner = dumped.dropFirst(parser.startMarker.utf8.count).dropLast(parser.endMarker.utf8.count)
                for marker in [Array(parser.startMarker.utf8), Array(parser.endMarker.utf8)] {
                    let found = inner.indices.contains { inner[$0...].starts(with: marker) }
                    #expect(!found, "dump: \(String(decoding: dumped, as: UTF8.self))")
                }
                #expect(try parser.parseText(String(decoding: dumped, as: UTF8.self)) == [call])
            }
        }
    }
}

@Suite struct LFMParserTests {
    let lfm = LFMFunctionCallParser()

    @Test func errorsNameOffsetExpectationAndText() {
        let cases: [(String, String)] = [
            ("[f(a=1]", "invalid function call at offset 6: expected ',' or ')' in the call of 'f', found ']' in: [f(a=1]"),
            ("[f(1)]", "at offset 3: expected a keyword argument (name=value) in the call of 'f', found '1'"),
            ("[f(a=1, a=2)]", "at offset 8: expected a keyword argument that is not repeated in the call of 'f', found 'a' a second time"),
            ("[f(a=\"abc)]", "at offset 5: expected a closing quote, found an unterminated string"),
            ("[f(a=foo)]", "at offset 5: expected a value (string, number, True/False/None, list, tuple or dict), found 'foo'"),
            ("[f(a={1: 2})]", "at offset 6: expected a string key in a dict, found '1'"),
            ("[f(a=\"\\ud800x\")]", "at offset 6: expected a low surrogate \\u escape after \\ud800, found an unpaired surrogate"),
            ("[f(a=1)] extra", "at offset 9: expected the end of the function calls, found 'e'"),
            ("[f(a=é)]", "at offset 5: expected a value (string, number, True/False/None, list, tuple or dict), found 'é'"),
            ("[f(a=1)", "at offset 7: expected ',' or ']' after a function call, found end of input"),
            ("{\"arguments\": {}}", "at offset 0: expected a \"name\" field in the function call object, found no \"name\""),
        ]
        for (body, expected) in cases {
            let e = thrownError { try lfm.parse(body) }
            #expect(e?.kind == .functionCallParsing)
            #expect(e?.message.contains(expected) == true, "\(body): \(e?.message ?? "no error")")
        }
    }

    @Test func longBodiesAreQuotedAroundTheOffset() {
        let body = "[f(a=\"" + String(repeating: "x", count: 1000) + "\", b=?)]"
        let e = thrownError { try lfm.parse(body) }
        let message = e?.message ?? ""
        #expect(message.contains("at offset 1011: expected a value, found '?'"))
        #expect(message.contains("...xxx"))
        #expect(message.contains("b=?)]"))
        #expect(message.count < 400)
    }

    @Test func deepNestingIsAnErrorNotACrash() {
        let body = "[f(a=" + String(repeating: "[", count: 100_000) + ")]"
        #expect(thrownError { try lfm.parse(body) }?.message.contains("levels of nesting") == true)
    }

    @Test func leniencies() throws {
        // Raw newlines inside strings, leading zeros, JSON's \/ and surrogate pairs.
        #expect(try lfm.parse("[f(s='a\nb', n=007, u=\"a\\/b\", e=\"\\ud83d\\ude00\")]")
            == [call("f", [("s", .string("a\nb")), ("n", .int(7)), ("u", .string("a/b")), ("e", .string("😀"))])])
        // JSON objects without list brackets, separated by a comma or a newline.
        #expect(try lfm.parse("{\"name\": \"a\"},\n{\"name\": \"b\"}\n{\"name\": \"c\"}") == [call("a"), call("b"), call("c")])
        #expect(try lfm.parse("") == [])
        #expect(try lfm.parse("  \n ") == [])
    }

    @Test func parseTextFindsEveryBlock() throws {
        let text = "Sure.<|tool_call_start|>[a(x=1)]<|tool_call_end|> and <|tool_call_start|>[b()]<|tool_call_end|>tail<|tool_call_start|>[c(y=\"z\")]"
        #expect(try lfm.parseText(text) == [call("a", [("x", .int(1))]), call("b"), call("c", [("y", .string("z"))])])
        #expect(try lfm.parseText("[a()]<|tool_call_end|>ignored") == [call("a")])
        #expect(try lfm.parseText("[d()]") == [call("d")])  // without markers the text is the body
        #expect(thrownError { try lfm.parseText("no markers at all") }?.kind == .functionCallParsing)
    }

    @Test func dumpOfNothingIsEmpty() {
        #expect(lfm.dump([]) == "")
        #expect(HermesFunctionCallParser().dump([]) == "")
    }
}

@Suite struct HermesParserTests {
    let hermes = HermesFunctionCallParser()

    @Test func parsesObjectsAndStringArguments() throws {
        #expect(try hermes.parse("\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n")
            == [call("get_weather", [("city", .string("Paris")), ("days", .int(3))])])
        #expect(try hermes.parse(#"{"name": "f", "arguments": "{\"a\": [1, null, 2.5]}"}"#)
            == [call("f", [("a", .array([.int(1), .null, .double(2.5)]))])])
        #expect(try hermes.parse(#"[{"name": "a"}, {"name": "b", "arguments": {}}]"#) == [call("a"), call("b")])
    }

    @Test func errors() {
        for (body, fragment) in [
            ("get_weather(city=1)", "at offset 0: expected a JSON object"),
            (#"{"name": "f", "arguments": 3}"#, "expected \"arguments\" of 'f' to be an object, found a number"),
            (#"{"name": "f"} {"name": "g"}"#, "at offset 14: expected the end of the function call, found '{'"),
            (#"{"name": "f", "arguments": {"a": }}"#, "at offset 33: expected a value, found '}'"),
        ] {
            let e = thrownError { try hermes.parse(body) }
            #expect(e?.kind == .functionCallParsing)
            #expect(e?.message.contains(fragment) == true, "\(body): \(e?.message ?? "no error")")
        }
    }

    @Test func parseTextOverSeveralBlocks() throws {
        let text = "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {\"k\": \"v\"}}\n</tool_call>"
        #expect(try hermes.parseText(text) == [call("a"), call("b", [("k", .string("v"))])])
    }
}
