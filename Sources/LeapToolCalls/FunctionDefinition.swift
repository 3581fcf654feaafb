import LeapCore
import LeapJSON

/// A function the model may call (LEAP §8.1): registered on a conversation, shown to the model through
/// the chat template as OpenAI-style tool JSON.
package struct LeapFunction: Equatable, Sendable {
    package var name: String
    package var description: String
    package var parameters: [LeapFunctionParameter]

    package init(name: String, description: String, parameters: [LeapFunctionParameter] = []) {
        self.name = name
        self.description = description
        self.parameters = parameters
    }

    /// Checks what a model needs to call the function: an identifier-like name (letters, digits,
    /// underscore, no leading digit; Pythonic calls are parsed that way), unique non-empty parameter
    /// names, and object types whose `required` names exist. Errors are `.invalidArgument`.
    package func validate() throws {
        guard LeapFunction.isIdentifier(name) else {
            throw LeapError.invalidArgument("function name \"\(name)\" is not valid: use letters, digits and underscores, not starting with a digit")
        }
        var seen = Set<[UInt8]>()   // names as bytes: "e\u{301}" is not the name "\u{e9}" (Swift's == says it is)
        for p in parameters {
            guard !p.name.isEmpty else { throw LeapError.invalidArgument("function \(name): a parameter has an empty name") }
            guard seen.insert(Array(p.name.utf8)).inserted else {
                throw LeapError.invalidArgument("function \(name): parameter \"\(p.name)\" is defined twice")
            }
            try p.type.validate(path: "function \(name), parameter \(p.name)")
        }
    }

    /// `[A-Za-z_][A-Za-z0-9_]*`
    package static func isIdentifier(_ s: String) -> Bool {
        guard let first = s.utf8.first else { return false }
        func letter(_ c: UInt8) -> Bool { (c | 0x20 >= UInt8(ascii: "a") && c | 0x20 <= UInt8(ascii: "z")) || c == UInt8(ascii: "_") }
        return letter(first) && s.utf8.allSatisfy { letter($0) || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) }
    }

    /// The JSON Schema of the arguments: `{"type":"object","properties":{...},"required":[...]}` where each
    /// property is its type's schema with the parameter's description, and `required` lists the
    /// parameters that are not optional (always present, possibly empty).
    package var parametersSchema: JSONValue {
        var properties = JSONObject()
        for p in parameters { properties.set(p.name, p.schema) }
        return .object(JSONObject([
            ("type", .string("object")),
            ("properties", .object(properties)),
            ("required", .array(parameters.filter { !$0.optional }.map { .string($0.name) })),
        ]))
    }

    /// `{"name": ..., "description": ..., "parameters": {...}}`
    package var functionJSON: JSONValue {
        .object(JSONObject([
            ("name", .string(name)),
            ("description", .string(description)),
            ("parameters", parametersSchema),
        ]))
    }

    /// The OpenAI tool object chat templates receive: `{"type":"function","function":{...}}`.
    package var toolJSON: JSONValue {
        .object(JSONObject([("type", .string("function")), ("function", functionJSON)]))
    }
}

/// One named argument of a function (LEAP §8.2).
package struct LeapFunctionParameter: Equatable, Sendable {
    package var name: String
    package var type: LeapFunctionParameterType
    package var description: String
    /// Optional parameters are left out of the schema's `required` list.
    package var optional: Bool

    package init(name: String, type: LeapFunctionParameterType, description: String, optional: Bool = false) {
        self.name = name
        self.type = type
        self.description = description
        self.optional = optional
    }

    /// The type's schema whose description is the parameter's (LEAP replaces the nested type's
    /// description; an empty parameter description keeps the type's own).
    package var schema: JSONValue {
        type.schema(description: description.isEmpty ? nil : description)
    }
}

/// The JSON-Schema type of a parameter (LEAP §8.3). `description` is optional on all but `null`.
package indirect enum LeapFunctionParameterType: Equatable, Sendable {
    case string(enumValues: [String]? = nil, description: String? = nil)
    case number(enumValues: [Double]? = nil, description: String? = nil)
    case integer(enumValues: [Int64]? = nil, description: String? = nil)
    case boolean(description: String? = nil)
    case array(itemType: LeapFunctionParameterType, description: String? = nil)
    case object(properties: [Property] = [], required: [String] = [], description: String? = nil)
    case null

    /// A named property of an object type (ordered: the schema keeps this order).
    package struct Property: Equatable, Sendable {
        package var name: String
        package var type: LeapFunctionParameterType
        package init(_ name: String, _ type: LeapFunctionParameterType) {
            self.name = name
            self.type = type
        }
    }

    /// "string", "number", ...
    package var typeName: String {
        switch self {
        case .string: return "string"
        case .number: return "number"
        case .integer: return "integer"
        case .boolean: return "boolean"
        case .array: return "array"
        case .object: return "object"
        case .null: return "null"
        }
    }

    package var description: String? {
        switch self {
        case .string(_, let d), .number(_, let d), .integer(_, let d), .boolean(let d), .array(_, let d), .object(_, _, let d): return d
        case .null: return nil
        }
    }

    /// JSON Schema, keys in this order: `type`, `enum`, `description`, then `items` (array) or
    /// `properties` + `required` (object; `required` always present). `description` overrides the
    /// type's own (`null` has none).
    package func schema(description override: String? = nil) -> JSONValue {
        var o = JSONObject()
        o.set("type", .string(typeName))
        switch self {
        case .string(let values, _): if let values { o.set("enum", .array(values.map { .string($0) })) }
        case .number(let values, _): if let values { o.set("enum", .array(values.map { .double($0) })) }
        case .integer(let values, _): if let values { o.set("enum", .array(values.map { .int($0) })) }
        default: break
        }
        if self != .null, let d = override ?? description { o.set("description", .string(d)) }
        switch self {
        case .array(let item, _):
            o.set("items", item.schema())
        case .object(let properties, let required, _):
            var props = JSONObject()
            for p in properties { props.set(p.name, p.type.schema()) }
            o.set("properties", .object(props))
            o.set("required", .array(required.map { .string($0) }))
        default: break
        }
        return .object(o)
    }

    func validate(path: String) throws {
        switch self {
        case .array(let item, _):
            try item.validate(path: path + " items")
        case .object(let properties, let required, _):
            var names = Set<[UInt8]>()   // as bytes, as JSON keys compare
            for p in properties {
                guard names.insert(Array(p.name.utf8)).inserted else { throw LeapError.invalidArgument("\(path): property \"\(p.name)\" is defined twice") }
                try p.type.validate(path: "\(path).\(p.name)")
            }
            for r in required where !names.contains(Array(r.utf8)) {
                throw LeapError.invalidArgument("\(path): required property \"\(r)\" is not among the properties")
            }
        case .number(let values?, _):
            if let bad = values.first(where: { !$0.isFinite }) { throw LeapError.invalidArgument("\(path): enum value \(bad) is not a finite number") }
        default: break
        }
    }
}
