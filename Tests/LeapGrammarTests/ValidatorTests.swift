import LeapJSON
import Testing

/// The test validator itself, on the Python-produced valid documents and hand-written invalid ones.
@Suite struct ValidatorTests {
    @Test func goldensAreLoaded() {
        #expect(goldenCases.count >= 15)
    }

    @Test func acceptsEveryValidGolden() {
        for c in goldenCases {
            for text in c.valid {
                let err = documentError(Array(text.utf8), c.schema)
                #expect(err == nil, "\(c.name): \(text): \(err ?? "")")
            }
        }
    }

    @Test func rejectsEveryInvalidGolden() {
        for c in goldenCases {
            for text in c.invalid {
                #expect(documentError(Array(text.utf8), c.schema) != nil, "\(c.name): \(text)")
            }
        }
    }

    @Test func specSemanticsBeyondTheGrammarPolicy() throws {
        // Extra properties are valid when additionalProperties is absent; order does not matter.
        let s = try JSONParser.parse(#"{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a"]}"#)
        #expect(documentError(Array(#"{"b":"x","a":1,"z":[]}"#.utf8), s) == nil)
        // oneOf needs exactly one branch.
        let one = try JSONParser.parse(#"{"oneOf":[{"type":"integer"},{"type":"number"}]}"#)
        #expect(documentError(Array("1.5".utf8), one) == nil)
        #expect(documentError(Array("1".utf8), one) != nil)
        // Lengths count code points; 1.0 is an integer.
        let str = try JSONParser.parse(#"{"type":"string","maxLength":1}"#)
        #expect(documentError(Array(#""😀""#.utf8), str) == nil)
        #expect(documentError(Array("1.0".utf8), try JSONParser.parse(#"{"type":"integer"}"#)) == nil)
    }
}
