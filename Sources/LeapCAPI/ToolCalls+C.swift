import CLeap
import Glibc
import LeapCore
import LeapJSON
import LeapMessages
import LeapToolCalls

// leap_function_calls_*: the standalone function-call parsers.

func functionCallParser(from c: leap_function_call_parser) throws -> any FunctionCallParser {
    switch c {
    case LEAP_FUNCTION_CALL_PARSER_LFM: return LFMFunctionCallParser()
    case LEAP_FUNCTION_CALL_PARSER_HERMES: return HermesFunctionCallParser()
    case LEAP_FUNCTION_CALL_PARSER_NONE:
        throw LeapError.invalidArgument("parser is LEAP_FUNCTION_CALL_PARSER_NONE; choose LFM or HERMES")
    default:
        throw LeapError.invalidArgument("parser \(c.rawValue) is not a leap_function_call_parser value")
    }
}

/// `[{"name":...,"arguments":{...}}, ...]`
func functionCallsJSON(_ calls: [LeapFunctionCall]) -> String {
    JSONValue.array(calls.map { $0.toJSON() }).serialized()
}

@c @implementation
public func leap_function_calls_parse(_ parser: leap_function_call_parser, _ text: UnsafePointer<CChar>?,
                                      _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_calls_json")
        out.pointee = nil
        let p = try functionCallParser(from: parser)
        let calls = try p.parseText(try utf8String(text, "text"))
        out.pointee = try ownedCString(functionCallsJSON(calls))
    }
}

@c @implementation
public func leap_function_calls_parse_n(_ parser: leap_function_call_parser, _ text: UnsafePointer<CChar>?, _ n: Int,
                                        _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_calls_json")
        out.pointee = nil
        let p = try functionCallParser(from: parser)
        guard n == 0 || text != nil else { throw LeapError.invalidArgument("text must not be NULL when n_bytes is \(n)") }
        let bytes = text.map { UnsafeRawBufferPointer(start: $0, count: n).bindMemory(to: UInt8.self) } ?? UnsafeBufferPointer(start: nil, count: 0)
        guard let s = String(validating: bytes, as: UTF8.self) else { throw LeapError.invalidArgument("text is not valid UTF-8") }
        out.pointee = try ownedCString(functionCallsJSON(try p.parseText(s)))
    }
}

@c @implementation
public func leap_function_calls_dump(_ parser: leap_function_call_parser, _ json: UnsafePointer<CChar>?,
                                     _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_text")
        out.pointee = nil
        let p = try functionCallParser(from: parser)
        let value: JSONValue
        do { value = try JSONParser.parse(try utf8String(json, "calls_json")) } catch let e as LeapError where e.kind == .serialization {
            throw LeapError.serialization("calls_json: \(e.message)")
        }
        let items: [JSONValue]
        switch value {
        case .array(let a): items = a
        case .object: items = [value]
        default: throw LeapError.serialization("calls_json: expected an array of {\"name\", \"arguments\"} objects, found \(value.typeName)")
        }
        let calls = try items.enumerated().map { i, item in try LeapFunctionCall.fromJSON(item, path: "calls_json[\(i)]") }
        out.pointee = try ownedCString(p.dump(calls))
    }
}
