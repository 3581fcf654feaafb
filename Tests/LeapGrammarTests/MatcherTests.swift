import LeapCore
import LeapGrammar
import LeapJSON
import Testing

/// Feeds `text` byte by byte; true if every byte is accepted and the matcher can end afterwards.
func matches(_ g: Grammar, _ text: String) -> Bool {
    let m = g.makeMatcher()
    for b in text.utf8 where !m.accept(b) { return false }
    return m.canEnd
}

@Suite struct MatcherTests {
    @Test func goldensValidAcceptedInvalidRejected() throws {
        #expect(!goldenCases.isEmpty)
        for c in goldenCases {
            let g = try JSONSchemaGrammar(schema: c.schema).grammar
            for text in c.valid {
                let ok = matches(g, text)
                #expect(ok, "\(c.name) should accept: \(text)")
            }
            for text in c.invalid {
                let ok = matches(g, text)
                #expect(!ok, "\(c.name) should reject: \(text)")
            }
        }
    }

    @Test func policyRejectsSomeSpecValidDocuments() throws {
        var n = 0
        for c in goldenCases {
            let g = try JSONSchemaGrammar(schema: c.schema).grammar
            for text in c.policy {
                #expect(documentError(Array(text.utf8), c.schema) == nil, "\(c.name): valid per spec: \(text)")
                let ok = matches(g, text)
                #expect(!ok, "\(c.name): policy should reject: \(text)")
                n += 1
            }
        }
        #expect(n >= 10)
    }

    @Test func completeMeansNothingMayFollow() throws {
        let g = try JSONSchemaGrammar(schemaText: #"{"type":"object","properties":{"a":{"type":"integer"}}}"#).grammar
        let m = g.makeMatcher()
        #expect(!m.canEnd && !m.isComplete)
        #expect(m.accept(Array(#"{"a":12"#.utf8)))
        #expect(!m.canEnd)
        #expect(m.accept(UInt8(ascii: "}")))
        #expect(m.isComplete && m.canEnd)
        #expect(m.allowedNextBytes.isEmpty)
        #expect(!m.accept(UInt8(ascii: " ")))

        // A number at the top level can end but may also continue.
        let n = try JSONSchemaGrammar(schemaText: #"{"type":"integer"}"#).makeMatcher()
        #expect(n.accept(Array("12".utf8)))
        #expect(n.canEnd && !n.isComplete)
        #expect(n.accept(Array("345".utf8)))
    }

    @Test func acceptIsAllOrNothing() throws {
        let g = try JSONSchemaGrammar(schemaText: #"{"enum":["abc","abd"]}"#).grammar
        let m = g.makeMatcher()
        #expect(m.accept(Array(#""ab"#.utf8)))
        #expect(!m.accept(Array("cX".utf8)))  // 'c' is fine, 'X' is not: nothing consumed
        #expect(m.accept(Array(#"d""#.utf8)))
        #expect(m.isComplete)
    }

    @Test func cloneAndResetAreIndependent() throws {
        let g = try JSONSchemaGrammar(schemaText: #"{"type":"array","items":{"type":"boolean"}}"#).grammar
        let m = g.makeMatcher()
        #expect(m.accept(Array("[true".utf8)))
        let c = m.clone()
        #expect(c.accept(Array(",false]".utf8)) && c.isComplete)
        #expect(!m.isComplete)
        #expect(m.accept(Array("]".utf8)) && m.isComplete)
        m.reset()
        #expect(!m.canEnd)
        #expect(m.accept(Array("[]".utf8)) && m.isComplete)
    }

    @Test func whitespaceIsBounded() throws {
        let g = try JSONSchemaGrammar(schemaText: #"{"type":"object","properties":{"a":{"type":"null"}}}"#,
                                      options: .init(maxIndent: 4)).grammar
        #expect(matches(g, "{\n    \"a\": null\n}"))
        #expect(matches(g, "{ \"a\" : null }"))
        #expect(!matches(g, "{\n     \"a\": null}"))  // 5 spaces after the newline
        #expect(!matches(g, "{  \"a\": null}"))       // two spaces
        #expect(!matches(g, "{\n\n\"a\": null}"))     // two newlines
        #expect(!matches(g, " {\"a\": null}"))        // nothing before the value
    }

    @Test func longStringsAndArenaCompaction() throws {
        let g = try JSONSchemaGrammar(schemaText: #"{"type":"array","items":{"type":"string"}}"#).grammar
        let m = g.makeMatcher()
        #expect(m.accept(UInt8(ascii: "[")))
        for i in 0..<3000 {
            #expect(m.accept(Array(#""item \#(i) é😀\n\u00e9","#.utf8)))
        }
        #expect(m.accept(Array(#""last"]"#.utf8)))
        #expect(m.isComplete)
    }

    @Test func shortestCompletionClosesTheDocument() throws {
        let schema = try JSONParser.parse(#"{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","minLength":2}},"b":{"type":"integer","minimum":10}},"required":["a","b"]}"#)
        let g = try JSONSchemaGrammar(schema: schema).grammar
        let m = g.makeMatcher()
        #expect(m.accept(Array(#"{"a":["x"#.utf8)))
        let rest = m.shortestCompletion()
        let text = #"{"a":["x"# + String(decoding: rest, as: UTF8.self)
        #expect(text == #"{"a":["x "],"b":10}"#)
        #expect(documentError(Array(text.utf8), schema) == nil)
    }

    @Test func oneOfOverlapKeepsBothInterpretations() throws {
        // Both branches start the same; the matcher must keep both until the key decides.
        let g = try JSONSchemaGrammar(schemaText: #"{"oneOf":[{"type":"object","properties":{"kind":{"const":"a"},"x":{"type":"integer"}},"required":["kind","x"]},{"type":"object","properties":{"kind":{"const":"b"},"y":{"type":"string"}},"required":["kind","y"]}]}"#).grammar
        #expect(matches(g, #"{"kind":"a","x":1}"#))
        #expect(matches(g, #"{"kind":"b","y":"1"}"#))
        #expect(!matches(g, #"{"kind":"a","y":"1"}"#))
    }
}

/// Keys, values and pointers are code points (JSON and JSON Schema compare them so): "\u{e9}" and "e\u{301}"
/// are canonically equivalent, equal to Swift's String ==, yet two property names and two consts; a "/"
/// followed by a combining mark is one Character, and still a pointer's "/". Each document is checked
/// against the spec-side validator too.
@Suite struct CodePointTests {
    func check(_ schemaText: String, accepts: [String], rejects: [String]) throws {
        let schema = try JSONParser.parse(schemaText)
        let g = try JSONSchemaGrammar(schema: schema).grammar
        for d in accepts {
            #expect(documentError(Array(d.utf8), schema) == nil, "valid per spec: \(d)")
            #expect(matches(g, d), "\(schemaText) should accept \(d)")
        }
        for d in rejects {
            #expect(documentError(Array(d.utf8), schema) != nil, "invalid per spec: \(d)")
            #expect(!matches(g, d), "\(schemaText) should reject \(d)")
        }
    }

    @Test func requiredNamesAreCodePoints() throws {
        try check(#"{"type":"object","properties":{"\u00e9":{"type":"integer"}},"required":["e\u0301"]}"#,
                  accepts: ["{\"e\u{301}\": 1}", "{\"\u{e9}\": 1, \"e\u{301}\": 2}"], rejects: ["{\"\u{e9}\": 1}"])
        // Required yet not declared, with no other key allowed: no document fits.
        #expect(throws: LeapError.self) {
            try JSONSchemaGrammar(schemaText: #"{"properties":{"\u00e9":{}},"required":["e\u0301"],"additionalProperties":false}"#)
        }
    }

    @Test func equivalentSubschemasKeepTheirOwnRules() throws {
        try check(#"{"type":"object","properties":{"a":{"const":"\u00e9"},"b":{"const":"e\u0301"}},"required":["a","b"]}"#,
                  accepts: ["{\"a\": \"\u{e9}\", \"b\": \"e\u{301}\"}"], rejects: ["{\"a\": \"\u{e9}\", \"b\": \"\u{e9}\"}"])
        try check(#"{"$defs":{"\u00e9":{"type":"integer"},"e\u0301":{"type":"string"}},"type":"object","#
                  + ##""properties":{"x":{"$ref":"#/$defs/\u00e9"},"y":{"$ref":"#/$defs/e\u0301"}},"required":["x","y"]}"##,
                  accepts: [#"{"x": 1, "y": "s"}"#], rejects: [#"{"x": 1, "y": 2}"#])
    }

    @Test func pointersSplitOnBytes() throws {
        try check(#"{"$defs":{"a":{"\u0301b":{"type":"integer"}},"a/\u0301b":{"type":"string"}},"type":"object","#
                  + ##""properties":{"x":{"$ref":"#/$defs/a/\u0301b"}},"required":["x"]}"##,
                  accepts: [#"{"x": 1}"#], rejects: [#"{"x": "s"}"#])
    }
}
