import LeapCore
import LeapJSON

// Tool JSON -> LeapFunction, so that C and Python can register functions as JSON. Accepts the OpenAI tool
// object `{"type":"function","function":{...}}` or the bare function object `{"name","description",
// "parameters"}`. Shape errors are `.serialization` and name the JSON path; a bad name is
// `.invalidArgument`. Schema keywords a LeapFunctionParameterType cannot hold (minimum, default, ...) are
// ignored; anything that would change the meaning (a `type` list, `$ref`) is an error.

extension LeapFunction {
    package static func fromToolJSON(_ text: String) throws -> LeapFunction {
        try fromToolJSON(try JSONParser.parse(text))
    }

    package static func fromToolJSON(_ v: JSONValue) throws -> LeapFunction {
        guard case .object(var o) = v else { throw LeapError.serialization("tool: expected an object, found \(v.typeName)") }
        var path = "tool"
        if let t = o["type"] {
            guard t == .string("function") else { throw LeapError.serialization("tool.type: expected \"function\", found \(t.serialized())") }
            guard let f = o["function"] else { throw LeapError.serialization("tool.function: missing field") }
            guard case .object(let fo) = f else { throw LeapError.serialization("tool.function: expected an object, found \(f.typeName)") }
            o = fo
            path = "tool.function"
        }
        guard let nameValue = o["name"] else { throw LeapError.serialization("\(path).name: missing field") }
        guard case .string(let name) = nameValue else { throw LeapError.serialization("\(path).name: expected a string, found \(nameValue.typeName)") }
        guard isIdentifier(name) else {
            throw LeapError.invalidArgument("\(path).name: \"\(name)\" is not a valid function name (letters, digits and underscores, not starting with a digit)")
        }
        let description = try optionalString(o, "description", path) ?? ""
        var parameters: [LeapFunctionParameter] = []
        if let p = o["parameters"], p != .null {
            let ppath = path + ".parameters"
            guard case .object(let po) = p else { throw LeapError.serialization("\(ppath): expected an object, found \(p.typeName)") }
            if let t = po["type"], t != .string("object") {
                throw LeapError.serialization("\(ppath).type: expected \"object\", found \(t.serialized())")
            }
            let (properties, required) = try parseProperties(po, ppath)
            parameters = properties.map { prop in
                LeapFunctionParameter(name: prop.name, type: prop.type.withoutDescription, description: prop.type.description ?? "",
                                      optional: !required.contains(prop.name))
            }
        }
        let f = LeapFunction(name: name, description: description, parameters: parameters)
        try f.validate()
        return f
    }
}

extension LeapFunctionParameterType {
    /// Parses one JSON-Schema type object (`path` names it in errors).
    package static func fromSchema(_ v: JSONValue, path: String) throws -> LeapFunctionParameterType {
        guard case .object(let o) = v else { throw LeapError.serialization("\(path): expected a schema object, found \(v.typeName)") }
        for unsupported in ["$ref", "anyOf", "oneOf", "allOf"] where o[unsupported] != nil {
            throw LeapError.serialization("\(path).\(unsupported): not supported in function parameters (use a plain \"type\")")
        }
        guard let t = o["type"] else { throw LeapError.serialization("\(path).type: missing field") }
        guard case .string(let type) = t else {
            throw LeapError.serialization("\(path).type: expected one type name as a string, found \(t.serialized())")
        }
        let description = try optionalString(o, "description", path)
        func enumValues<T>(_ convert: (JSONValue) -> T?, _ what: String) throws -> [T]? {
            guard let e = o["enum"], e != .null else { return nil }
            guard case .array(let items) = e else { throw LeapError.serialization("\(path).enum: expected an array, found \(e.typeName)") }
            return try items.enumerated().map { i, item in
                guard let x = convert(item) else { throw LeapError.serialization("\(path).enum[\(i)]: expected \(what), found \(item.serialized())") }
                return x
            }
        }
        switch type {
        case "string":
            return .string(enumValues: try enumValues({ $0.stringValue }, "a string"), description: description)
        case "number":
            return .number(enumValues: try enumValues({ $0.doubleValue }, "a number"), description: description)
        case "integer":
            let ints = try enumValues({ v -> Int64? in if case .int(let i) = v { return i } else { return nil } }, "an integer")
            return .integer(enumValues: ints, description: description)
        case "boolean":
            return .boolean(description: description)
        case "null":
            return .null
        case "array":
            guard let items = o["items"] else { throw LeapError.serialization("\(path).items: missing field (an array type needs its item type)") }
            return .array(itemType: try fromSchema(items, path: path + ".items"), description: description)
        case "object":
            let (properties, required) = try parseProperties(o, path)
            return .object(properties: properties, required: required, description: description)
        default:
            throw LeapError.serialization("\(path).type: unknown type \"\(type)\" (expected string, number, integer, boolean, array, object or null)")
        }
    }

    var withoutDescription: LeapFunctionParameterType {
        switch self {
        case .string(let e, _): return .string(enumValues: e)
        case .number(let e, _): return .number(enumValues: e)
        case .integer(let e, _): return .integer(enumValues: e)
        case .boolean: return .boolean()
        case .array(let item, _): return .array(itemType: item)
        case .object(let p, let r, _): return .object(properties: p, required: r)
        case .null: return .null
        }
    }
}

/// `properties` (optional object) and `required` (optional array of names that must be properties).
private func parseProperties(_ o: JSONObject, _ path: String) throws -> ([LeapFunctionParameterType.Property], [String]) {
    var properties: [LeapFunctionParameterType.Property] = []
    if let p = o["properties"], p != .null {
        guard case .object(let po) = p else { throw LeapError.serialization("\(path).properties: expected an object, found \(p.typeName)") }
        for (name, schema) in po {
            guard !name.isEmpty else { throw LeapError.serialization("\(path).properties: a property has an empty name") }
            properties.append(.init(name, try LeapFunctionParameterType.fromSchema(schema, path: "\(path).properties.\(name)")))
        }
    }
    var required: [String] = []
    if let r = o["required"], r != .null {
        guard case .array(let items) = r else { throw LeapError.serialization("\(path).required: expected an array of names, found \(r.typeName)") }
        for (i, item) in items.enumerated() {
            guard case .string(let n) = item else { throw LeapError.serialization("\(path).required[\(i)]: expected a string, found \(item.typeName)") }
            guard properties.contains(where: { sameCodePoints($0.name, n) }) else {
                throw LeapError.serialization("\(path).required[\(i)]: \"\(n)\" is not one of the properties")
            }
            required.append(n)
        }
    }
    return (properties, required)
}

private func optionalString(_ o: JSONObject, _ key: String, _ path: String) throws -> String? {
    guard let v = o[key], v != .null else { return nil }
    guard case .string(let s) = v else { throw LeapError.serialization("\(path).\(key): expected a string, found \(v.typeName)") }
    return s
}
