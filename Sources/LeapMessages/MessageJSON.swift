import LeapCore
import LeapJSON

// The wire format of messages (OpenAI chat shape, as LEAP writes it). Encoding always emits `content`
// as an array; decoding also accepts a plain string. Errors name the offending field by its JSON path.

extension ChatMessageContent {
    package func toJSON() -> JSONValue {
        switch self {
        case .text(let t):
            return .object(JSONObject([("type", .string("text")), ("text", .string(t))]))
        case .image(let jpeg):
            let url = "data:image/jpeg;base64," + Base64.encode(jpeg)
            return .object(JSONObject([
                ("type", .string("image_url")),
                ("image_url", .object(JSONObject([("url", .string(url))]))),
            ]))
        case .audio(let wav):
            return .object(JSONObject([
                ("type", .string("input_audio")),
                ("input_audio", .object(JSONObject([("data", .string(Base64.encode(wav))), ("format", .string("wav"))]))),
            ]))
        case .audioPCMF32(let samples, let rate):
            return .object(JSONObject([
                ("type", .string("audio_pcm_f32")),
                ("samples", .array(samples.map { .double(Double($0)) })),
                ("sampleRate", .int(Int64(rate))),
            ]))
        }
    }

    package static func fromJSON(_ v: JSONValue, path: String) throws -> ChatMessageContent {
        guard case .object(let o) = v else { throw LeapError.serialization("\(path): expected an object, found \(v.typeName)") }
        let type = try requireString(o, "type", path)
        switch type {
        case "text":
            return .text(try requireString(o, "text", path))
        case "image_url":
            let imagePath = path + ".image_url"
            guard let iu = o["image_url"] else { throw LeapError.serialization("\(imagePath): missing field") }
            guard case .object(let io) = iu else {
                throw LeapError.serialization("\(imagePath): expected an object with \"url\", found \(iu.typeName)")
            }
            let url = try requireString(io, "url", imagePath)
            let prefix = "data:image/jpeg;base64,"
            // Bytes: String's hasPrefix is canonical equivalence, under which U+037E (Greek question mark)
            // is ";" and "," followed by a combining mark is not ",".
            guard url.utf8.starts(with: prefix.utf8) else {
                let shown = url.prefix(40)
                throw LeapError.serialization("\(imagePath).url: only data:image/jpeg;base64 URLs are supported, got \"\(shown)\(url.count > 40 ? "..." : "")\"")
            }
            let bytes = try Base64.decode(String(decoding: Array(url.utf8.dropFirst(prefix.utf8.count)), as: UTF8.self), field: imagePath + ".url")
            try ContentValidation.checkJPEG(bytes, field: imagePath + ".url")
            return .image(jpeg: bytes)
        case "input_audio":
            let audioPath = path + ".input_audio"
            guard let ia = o["input_audio"] else { throw LeapError.serialization("\(audioPath): missing field") }
            guard case .object(let ao) = ia else { throw LeapError.serialization("\(audioPath): expected an object, found \(ia.typeName)") }
            let format = try optionalString(ao, "format", audioPath) ?? "wav"
            guard format == "wav" else {
                throw LeapError.serialization("\(audioPath).format: only \"wav\" audio is supported, got \"\(format)\"")
            }
            let bytes = try Base64.decode(try requireString(ao, "data", audioPath), field: audioPath + ".data")
            do {
                try ContentValidation.checkWAV(bytes, field: audioPath + ".data")
            } catch let e as LeapError {
                throw LeapError.serialization(e.message)
            }
            return .audio(wav: bytes)
        case "audio_pcm_f32":
            guard let s = o["samples"] else { throw LeapError.serialization("\(path).samples: missing field") }
            guard case .array(let items) = s else { throw LeapError.serialization("\(path).samples: expected an array of numbers, found \(s.typeName)") }
            var samples = [Float]()
            samples.reserveCapacity(items.count)
            for (i, item) in items.enumerated() {
                guard let d = item.doubleValue else {
                    throw LeapError.serialization("\(path).samples[\(i)]: expected a number, found \(item.typeName)")
                }
                guard Float(d).isFinite else {
                    throw LeapError.serialization("\(path).samples[\(i)]: \(item.serialized()) is not a finite 32-bit float sample")
                }
                samples.append(Float(d))
            }
            guard let r = o["sampleRate"] else { throw LeapError.serialization("\(path).sampleRate: missing field") }
            guard let rate = r.intValue, rate > 0, rate <= 1_000_000 else {
                throw LeapError.serialization("\(path).sampleRate: expected a positive integer sample rate, found \(r.serialized())")
            }
            return .audioPCMF32(samples: samples, sampleRate: Int(rate))
        default:
            throw LeapError.serialization("\(path).type: unknown content type \"\(type)\" (expected text, image_url, input_audio or audio_pcm_f32)")
        }
    }
}

extension LeapFunctionCall {
    /// `{"name": ..., "arguments": {...}}`
    package func toJSON() -> JSONValue {
        .object(JSONObject([("name", .string(name)), ("arguments", .object(arguments))]))
    }

    /// Accepts `arguments` as an object or as a string holding a JSON object (OpenAI style).
    package static func fromJSON(_ v: JSONValue, path: String) throws -> LeapFunctionCall {
        guard case .object(let o) = v else { throw LeapError.serialization("\(path): expected an object, found \(v.typeName)") }
        let name = try requireString(o, "name", path)
        guard !name.isEmpty else { throw LeapError.serialization("\(path).name: must not be empty") }
        var args = JSONObject()
        switch o["arguments"] {
        case nil, .some(.null): break
        case .some(.object(let a)): args = a
        case .some(.string(let s)):
            let parsed: JSONValue
            do { parsed = try JSONParser.parse(s) } catch let e as LeapError {
                throw LeapError.serialization("\(path).arguments: \(e.message)")
            }
            guard case .object(let a) = parsed else {
                throw LeapError.serialization("\(path).arguments: expected a JSON object, found \(parsed.typeName)")
            }
            args = a
        case .some(let other):
            throw LeapError.serialization("\(path).arguments: expected an object, found \(other.typeName)")
        }
        return LeapFunctionCall(name: name, arguments: args)
    }
}

extension ChatMessage {
    package func toJSON() -> JSONValue {
        var o = JSONObject()
        o.set("role", .string(role.rawValue))
        o.set("content", .array(content.map { $0.toJSON() }))
        if let r = reasoningContent, !r.isEmpty { o.set("reasoning_content", .string(r)) }
        if let calls = functionCalls, !calls.isEmpty {
            o.set("tool_calls", .array(calls.enumerated().map { i, c in
                .object(JSONObject([
                    ("index", .int(Int64(i))),
                    ("id", .string("call_\(i)")),
                    ("type", .string("function")),
                    ("function", c.toJSON()),
                ]))
            }))
        }
        return .object(o)
    }

    package func toJSONString() -> String { toJSON().serialized() }

    package static func fromJSON(_ text: String) throws -> ChatMessage {
        try fromJSON(try JSONParser.parse(text), path: "message")
    }

    package static func fromJSON(_ v: JSONValue, path: String = "message") throws -> ChatMessage {
        guard case .object(let o) = v else { throw LeapError.serialization("\(path): expected an object, found \(v.typeName)") }
        let roleName = try requireString(o, "role", path)
        guard let role = ChatMessageRole(rawValue: roleName) else {
            throw LeapError.serialization("\(path).role: unknown role \"\(roleName)\" (expected user, system, assistant or tool)")
        }
        guard let c = o["content"] else { throw LeapError.serialization("\(path).content: missing field") }
        var content: [ChatMessageContent] = []
        switch c {
        case .string(let s): content = [.text(s)]
        case .null: content = []  // assistant messages with only tool calls (OpenAI shape)
        case .array(let parts):
            for (i, p) in parts.enumerated() { content.append(try ChatMessageContent.fromJSON(p, path: "\(path).content[\(i)]")) }
        default:
            throw LeapError.serialization("\(path).content: expected a string or an array of parts, found \(c.typeName)")
        }
        let reasoning = try optionalString(o, "reasoning_content", path)
        var calls: [LeapFunctionCall]? = nil
        if let tc = o["tool_calls"], tc != .null {
            guard case .array(let items) = tc else { throw LeapError.serialization("\(path).tool_calls: expected an array, found \(tc.typeName)") }
            var parsed: [LeapFunctionCall] = []
            for (i, item) in items.enumerated() {
                let itemPath = "\(path).tool_calls[\(i)]"
                guard case .object(let io) = item else { throw LeapError.serialization("\(itemPath): expected an object, found \(item.typeName)") }
                if let t = io["type"], t != .string("function") {
                    throw LeapError.serialization("\(itemPath).type: expected \"function\", found \(t.serialized())")
                }
                guard let f = io["function"] else { throw LeapError.serialization("\(itemPath).function: missing field") }
                parsed.append(try LeapFunctionCall.fromJSON(f, path: itemPath + ".function"))
            }
            calls = parsed.isEmpty ? nil : parsed
        }
        return ChatMessage(role: role, content: content, reasoningContent: (reasoning?.isEmpty ?? true) ? nil : reasoning,
                           functionCalls: calls)
    }
}

/// A list of messages (conversation history) to and from a JSON array.
package enum ChatHistoryJSON {
    package static func encode(_ messages: [ChatMessage]) -> String {
        JSONValue.array(messages.map { $0.toJSON() }).serialized()
    }

    package static func decode(_ text: String) throws -> [ChatMessage] {
        let v = try JSONParser.parse(text)
        guard case .array(let items) = v else { throw LeapError.serialization("history: expected an array of messages, found \(v.typeName)") }
        return try items.enumerated().map { i, m in try ChatMessage.fromJSON(m, path: "history[\(i)]") }
    }
}

private func requireString(_ o: JSONObject, _ key: String, _ path: String) throws -> String {
    guard let v = o[key] else { throw LeapError.serialization("\(path).\(key): missing field") }
    guard case .string(let s) = v else { throw LeapError.serialization("\(path).\(key): expected a string, found \(v.typeName)") }
    return s
}

private func optionalString(_ o: JSONObject, _ key: String, _ path: String) throws -> String? {
    guard let v = o[key], v != .null else { return nil }
    guard case .string(let s) = v else { throw LeapError.serialization("\(path).\(key): expected a string, found \(v.typeName)") }
    return s
}
