import LeapCore
import LeapJSON
import LeapToolCalls
import Testing

/// A function using every parameter type, enums, nesting, optional parameters and descriptions on both
/// the parameter and the nested type.
let weatherFunction = LeapFunction(
    name: "get_weather", description: "Current weather for a city.",
    parameters: [
        LeapFunctionParameter(name: "city", type: .string(), description: "City name"),
        LeapFunctionParameter(name: "unit", type: .string(enumValues: ["celsius", "fahrenheit"], description: "replaced"),
                              description: "Temperature unit", optional: true),
        LeapFunctionParameter(name: "days", type: .integer(enumValues: [1, 3, 7]), description: "Forecast days", optional: true),
        LeapFunctionParameter(name: "threshold", type: .number(enumValues: [0.5, 1]), description: ""),
        LeapFunctionParameter(name: "verbose", type: .boolean(), description: "More detail", optional: true),
        LeapFunctionParameter(name: "tags", type: .array(itemType: .string(description: "A tag")), description: "Tags"),
        LeapFunctionParameter(name: "where", type: .object(properties: [.init("lat", .number()), .init("lon", .number(description: "Longitude")),
                                                                     .init("extra", .null)],
                                                        required: ["lat"], description: "own"),
                              description: "Coordinates", optional: true),
        LeapFunctionParameter(name: "nothing", type: .null, description: "Always null", optional: true),
    ])

/// §8.4 written out by hand: type, enum, description, then items / properties + required; the parameter
/// description replaces the type's; `required` lists non-optional parameters and is always present.
let weatherToolJSON = #"{"type":"function","function":{"name":"get_weather","description":"Current weather for a city.","parameters":{"type":"object","properties":{"city":{"type":"string","description":"City name"},"unit":{"type":"string","enum":["celsius","fahrenheit"],"description":"Temperature unit"},"days":{"type":"integer","enum":[1,3,7],"description":"Forecast days"},"threshold":{"type":"number","enum":[0.5,1.0]},"verbose":{"type":"boolean","description":"More detail"},"tags":{"type":"array","description":"Tags","items":{"type":"string","description":"A tag"}},"where":{"type":"object","description":"Coordinates","properties":{"lat":{"type":"number"},"lon":{"type":"number","description":"Longitude"},"extra":{"type":"null"}},"required":["lat"]},"nothing":{"type":"null"}},"required":["city","threshold","tags"]}}}"#

@Suite struct FunctionDefinitionTests {
    @Test func toolJSONFollowsLEAP() throws {
        try weatherFunction.validate()
        #expect(weatherFunction.toolJSON.serialized() == weatherToolJSON)
    }

    @Test func emptyFunctionStillHasRequired() {
        let f = LeapFunction(name: "now", description: "Time")
        #expect(f.toolJSON.serialized() == #"{"type":"function","function":{"name":"now","description":"Time","parameters":{"type":"object","properties":{},"required":[]}}}"#)
    }

    /// JSON -> function -> JSON is the identity for the canonical JSON; the parsed function carries the
    /// descriptions on the parameters.
    @Test func parsesItsOwnToolJSONBack() throws {
        let parsed = try LeapFunction.fromToolJSON(weatherToolJSON)
        #expect(parsed.toolJSON.serialized() == weatherToolJSON)
        #expect(parsed.parameters.map(\.name) == weatherFunction.parameters.map(\.name))
        #expect(parsed.parameters.map(\.optional) == weatherFunction.parameters.map(\.optional))
        #expect(parsed.parameters[1] == LeapFunctionParameter(name: "unit", type: .string(enumValues: ["celsius", "fahrenheit"]),
                                                                description: "Temperature unit", optional: true))
        // The bare function object is accepted too.
        let bare = try LeapFunction.fromToolJSON(weatherFunction.functionJSON)
        #expect(bare == parsed)
    }

    @Test func acceptsTypicalOpenAIDefinitions() throws {
        let f = try LeapFunction.fromToolJSON(#"{"type":"function","function":{"name":"search","parameters":{"type":"object","properties":{"q":{"type":"string","minLength":1},"n":{"type":"integer","default":5}},"required":["q"],"additionalProperties":false}}}"#)
        #expect(f == LeapFunction(name: "search", description: "", parameters: [
            LeapFunctionParameter(name: "q", type: .string(), description: ""),
            LeapFunctionParameter(name: "n", type: .integer(), description: "", optional: true),
        ]))
        #expect(try LeapFunction.fromToolJSON(#"{"name":"noargs"}"#).parameters.isEmpty)
    }

    @Test func preciseErrors() {
        let cases: [(String, LeapError.Kind, String)] = [
            (#"{"type":"function","function":{"name":"1abc"}}"#, .invalidArgument, "tool.function.name: \"1abc\" is not a valid function name"),
            (#"{"name":"get-weather"}"#, .invalidArgument, "tool.name: \"get-weather\" is not a valid function name"),
            (#"{"name":""}"#, .invalidArgument, "is not a valid function name"),
            (#"{"type":"function"}"#, .serialization, "tool.function: missing field"),
            (#"{"type":"tool","function":{}}"#, .serialization, "tool.type: expected \"function\", found \"tool\""),
            (#"{"name":"f","parameters":{"type":"object","properties":{"city":{"type":"strng"}}}}"#, .serialization,
             "tool.parameters.properties.city.type: unknown type \"strng\" (expected string, number, integer, boolean, array, object or null)"),
            (#"{"name":"f","parameters":{"properties":{"a":{"type":["string","null"]}}}}"#, .serialization,
             "tool.parameters.properties.a.type: expected one type name as a string, found [\"string\",\"null\"]"),
            (#"{"name":"f","parameters":{"properties":{"a":{"type":"array"}}}}"#, .serialization, "tool.parameters.properties.a.items: missing field"),
            (#"{"name":"f","parameters":{"properties":{"a":{"type":"string"}},"required":["b"]}}"#, .serialization,
             "tool.parameters.required[0]: \"b\" is not one of the properties"),
            // Names are code points: "e\u0301" is not the property "\u00e9", though Swift's == says so.
            (#"{"name":"f","parameters":{"properties":{"\u00e9":{"type":"string"}},"required":["e\u0301"]}}"#, .serialization,
             "is not one of the properties"),
            (#"{"name":"f","parameters":{"properties":{"a":{"type":"integer","enum":[1,"2"]}}}}"#, .serialization,
             "tool.parameters.properties.a.enum[1]: expected an integer, found \"2\""),
            (##"{"name":"f","parameters":{"properties":{"a":{"$ref":"#/$defs/x"}}}}"##, .serialization, "tool.parameters.properties.a.$ref: not supported"),
            (#"{"name":"f","parameters":{"type":"array"}}"#, .serialization, "tool.parameters.type: expected \"object\", found \"array\""),
            (#"[1]"#, .serialization, "tool: expected an object, found an array"),
            (#"{"name":"f""#, .serialization, "invalid JSON"),
        ]
        for (json, kind, fragment) in cases {
            let e = thrownError { try LeapFunction.fromToolJSON(json) }
            #expect(e?.kind == kind, "\(json)")
            #expect(e?.message.contains(fragment) == true, "\(json): \(e?.message ?? "no error")")
        }
    }

    @Test func validateRejectsBadDefinitions() {
        #expect(thrownError { try LeapFunction(name: "a b", description: "").validate() }?.kind == .invalidArgument)
        let dup = LeapFunction(name: "f", description: "", parameters: [
            LeapFunctionParameter(name: "a", type: .null, description: ""), LeapFunctionParameter(name: "a", type: .null, description: ""),
        ])
        #expect(thrownError { try dup.validate() }?.message == "function f: parameter \"a\" is defined twice")
        let badRequired = LeapFunction(name: "f", description: "", parameters: [
            LeapFunctionParameter(name: "o", type: .object(properties: [], required: ["x"]), description: ""),
        ])
        #expect(thrownError { try badRequired.validate() }?.message == "function f, parameter o: required property \"x\" is not among the properties")
        // Names are code points: "\u{e9}" and "e\u{301}" are two names, and the one never stands for the other.
        let twoNames = LeapFunction(name: "f", description: "", parameters: [
            LeapFunctionParameter(name: "\u{e9}", type: .null, description: ""), LeapFunctionParameter(name: "e\u{301}", type: .null, description: ""),
        ])
        #expect(thrownError { try twoNames.validate() } == nil)
        let equivalentRequired = LeapFunction(name: "f", description: "", parameters: [
            LeapFunctionParameter(name: "o", type: .object(properties: [.init("\u{e9}", .null)],
                                                           required: ["e\u{301}"]), description: ""),
        ])
        #expect(thrownError { try equivalentRequired.validate() }?.message.hasSuffix("is not among the properties") == true)
        #expect(LeapFunction.isIdentifier("_x9") && !LeapFunction.isIdentifier("9x") && !LeapFunction.isIdentifier("é"))
    }
}
