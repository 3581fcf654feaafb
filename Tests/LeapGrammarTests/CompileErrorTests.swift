import LeapCore
import LeapGrammar
import LeapJSON
import Testing

@Suite struct CompileErrorTests {
    static let cases: [(schema: String, kind: LeapError.Kind, message: String)] = [
        (##"{"type":"object","properties":{"x":{"type":"string","pattern":"^a"}}}"##, .unsupported,
         "schema at #/properties/x: 'pattern' is not supported"),
        (##"{"not":{"type":"null"}}"##, .unsupported, "schema at #: 'not' is not supported"),
        (##"{"type":"array","items":{"if":{},"then":{}}}"##, .unsupported, "schema at #/items: 'if' is not supported"),
        (##"{"type":"number","multipleOf":2}"##, .unsupported, "schema at #: 'multipleOf' is not supported"),
        (##"{"type":"array","uniqueItems":true}"##, .unsupported, "schema at #: 'uniqueItems: true' is not supported"),
        (##"{"type":"strin"}"##, .invalidArgument,
         "schema at #: unknown type \"strin\" (expected one of string, number, integer, boolean, null, object, array)"),
        (##"{"type":3}"##, .invalidArgument, "schema at #: 'type' must be a string or an array of strings, found a number"),
        (##"{"properties":{"a/b":{"$ref":"#/$defs/missing"}}}"##, .invalidArgument,
         "schema at #/properties/a~1b: $ref \"#/$defs/missing\" does not resolve: no \"$defs\" in #"),
        (##"{"$defs":{},"$ref":"#/$defs/x"}"##, .invalidArgument,
         "schema at #: $ref \"#/$defs/x\" does not resolve: no \"x\" in #/$defs"),
        (##"{"$ref":"other.json#/a"}"##, .unsupported,
         "schema at #: $ref \"other.json#/a\" is not a local reference (only \"#...\" pointers are supported)"),
        (##"{"type":"string","minLength":-1}"##, .invalidArgument, "schema at #: 'minLength' must be a non-negative integer, found -1"),
        (##"{"type":"string","minLength":3,"maxLength":2}"##, .invalidArgument, "schema at #: 'minLength' 3 is greater than 'maxLength' 2"),
        (##"{"type":"array","items":{"type":"integer"},"minItems":5,"maxItems":2}"##, .invalidArgument,
         "schema at #: 'minItems' 5 is greater than 'maxItems' 2"),
        (##"{"enum":[]}"##, .invalidArgument, "schema at #: 'enum' is empty: no value is allowed"),
        (##"{"type":"string","enum":[1,2]}"##, .invalidArgument, "schema at #: no 'enum'/'const' value has the type string"),
        (##"{"anyOf":[]}"##, .invalidArgument, "schema at #: 'anyOf' must be a non-empty array of schemas"),
        (##"false"##, .invalidArgument, "schema at #: the schema 'false' allows no value"),
        (##"[1]"##, .invalidArgument, "schema at #: a schema must be an object or a boolean, found an array"),
        (##"{"properties":{"a":{"type":"integer","minimum":5,"maximum":3}}}"##, .invalidArgument,
         "schema at #/properties/a: no integer lies within the bounds [5.0, 3.0]"),
        (##"{"type":"object","properties":{"a":{"$ref":"#"}},"required":["a"]}"##, .invalidArgument,
         "the schema has no finite valid value (every branch recurses forever)"),
        (##"{"anyOf":[{"$ref":"#"},{"type":"null"}]}"##, .invalidArgument,
         "the schema refers to itself without any value in between (ref #)"),
        (##"{"type":"object","required":["q"],"additionalProperties":false}"##, .invalidArgument,
         "schema at #: required property \"q\" is not in 'properties' and 'additionalProperties' is false"),
        (##"{"allOf":[{"type":"string"},{"type":"integer"}]}"##, .unsupported,
         "schema at #/allOf/1: combining schemas with different 'type' values is not supported"),
        (##"{"type":"string","maxLength":100000000}"##, .unsupported, "schema at #: string lengths above 16777216 cannot be enforced"),
        (##"{"type":"array","maxItems":20000}"##, .unsupported, "schema at #: array lengths above 10000 cannot be enforced"),
        (##"{"type":"object""##, .invalidArgument, "JSON schema is not valid JSON: invalid JSON at line 1, column 17: expected ',' or '}' in object, found end of input"),
    ]

    @Test(arguments: 0..<cases.count)
    func preciseErrors(_ i: Int) {
        let c = CompileErrorTests.cases[i]
        do {
            _ = try JSONSchemaGrammar(schemaText: c.schema)
            Issue.record("\(c.schema) compiled")
        } catch let e as LeapError {
            #expect(e.kind == c.kind, "\(c.schema)")
            #expect(e.message == c.message)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func ignoredAnnotationsAndFormats() throws {
        let g = try JSONSchemaGrammar(schemaText: ##"{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"t","description":"d","type":"string","format":"date-time","examples":["x"]}"##).grammar
        #expect(matches(g, ##""not a date""##))
    }
}
