// BundleManifest: LEAP's model bundle manifest (the LeapBundles `<Model>-GGUF/<Quant>.json` files), parsed
// and validated. Layout:
//
//   { "schema_version": "1.0.0",
//     "inference_type": "llama.cpp/text-to-text" | "llama.cpp/image-to-text" | "llama.cpp/lfm2-audio-v1",
//     "load_time_parameters": { "model": FILE, "multimodal_projector"?: FILE, "audio_decoder"?: FILE,
//                               "audio_tokenizer"?: FILE, "chat_template"?: FILE or Jinja source },
//     "generation_time_parameters"?: {
//         "sampling_parameters"?: { "temperature", "top_p", "min_p", "repetition_penalty", "top_k" },
//         "number_of_decoding_threads"?: N } }
//
// FILE is an http(s) URL, a `file://` URL or a path (relative ones resolve against the manifest's own
// location), or, as an extension of LEAP's form, an object {"url": FILE, "sha256": "<64 hex digits>",
// "size": bytes} carrying the checksum and size a download is checked against. Unknown keys are ignored
// (LEAP reads manifests with ignoreUnknownKeys; a log warning names them); a known key with a wrong type or value is an error naming it.
import LeapCore
import LeapJSON

/// One file of a bundle: where it is, as written in the manifest, and what it must hash to.
package struct BundleFileReference: Equatable, Sendable {
    package var location: String
    /// Lowercase hex SHA-256 of the whole file, when the manifest gives one.
    package var sha256: String?
    /// Size in bytes, when the manifest gives one.
    package var size: Int64?

    package init(_ location: String, sha256: String? = nil, size: Int64? = nil) {
        self.location = location
        self.sha256 = sha256
        self.size = size
    }
}

/// The manifest's chat template: Jinja source written inline, or a file holding it.
package enum BundleChatTemplate: Equatable, Sendable {
    case source(String)
    case file(BundleFileReference)
}

/// `generation_time_parameters.sampling_parameters`: each nil when the manifest leaves it out.
package struct BundleSampling: Equatable, Sendable {
    package var temperature: Float?
    package var topP: Float?
    package var minP: Float?
    package var repetitionPenalty: Float?
    package var topK: Int?
    package init() {}
}

package struct BundleManifest: Equatable, Sendable {
    /// The inference types LEAP defines (an unknown one is refused, as LEAP does).
    package static let inferenceTypes = ["llama.cpp/text-to-text", "llama.cpp/image-to-text", "llama.cpp/lfm2-audio-v1"]
    /// A manifest is a few hundred bytes; anything this large is not one.
    package static let maxBytes = 1 << 20

    package var schemaVersion: String?
    package var inferenceType: String?
    package var model: BundleFileReference
    package var multimodalProjector: BundleFileReference?
    package var audioDecoder: BundleFileReference?
    package var audioTokenizer: BundleFileReference?
    package var chatTemplate: BundleChatTemplate?
    package var sampling = BundleSampling()
    /// `number_of_decoding_threads`; nil when absent or 0.
    package var decodingThreads: Int?

    package init(model: BundleFileReference) { self.model = model }

    /// The files of the bundle with their manifest keys, model first.
    package var files: [(key: String, file: BundleFileReference)] {
        var out: [(String, BundleFileReference)] = [("model", model)]
        if let f = multimodalProjector { out.append(("multimodal_projector", f)) }
        if let f = audioDecoder { out.append(("audio_decoder", f)) }
        if let f = audioTokenizer { out.append(("audio_tokenizer", f)) }
        if case .file(let f) = chatTemplate { out.append(("chat_template", f)) }
        return out
    }

    /// Parses and validates manifest JSON. Errors: `.format` (not JSON, not a manifest, a field of the wrong
    /// type or out of range: the message names the field), `.unsupported` (a schema major version other than
    /// 1, an unknown inference_type).
    package static func parse(_ bytes: [UInt8]) throws -> BundleManifest {
        guard bytes.count <= maxBytes else {
            throw LeapError.format("bundle manifest: \(bytes.count) bytes is too large for a manifest (at most \(maxBytes))")
        }
        let root: JSONValue
        do {
            root = try JSONParser.parse(bytes: bytes)
        } catch let e as LeapError {
            throw LeapError.format("bundle manifest is not valid JSON: \(e.message)")
        }
        guard let top = root.objectValue else {
            throw LeapError.format("bundle manifest: expected a JSON object, got \(root.typeName)")
        }
        let version = try optionalString(top, "schema_version")
        if let version {
            let major = version.split(separator: ".", omittingEmptySubsequences: false).first.map(String.init) ?? ""
            guard !major.isEmpty, major.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
                throw LeapError.format("bundle manifest: schema_version \"\(version)\" is not a version number like \"1.0.0\"")
            }
            guard major == "1" else {
                throw LeapError.unsupported("bundle manifest: schema_version \"\(version)\" is not supported (this library reads 1.x)")
            }
        }
        let inference = try optionalString(top, "inference_type")
        if let inference, !inferenceTypes.contains(inference) {
            throw LeapError.unsupported("bundle manifest: inference_type \"\(inference)\" is not supported (known: \(inferenceTypes.joined(separator: ", ")))")
        }
        guard let loadValue = top["load_time_parameters"], !loadValue.isNull else {
            throw LeapError.format("bundle manifest: load_time_parameters is missing")
        }
        guard let load = loadValue.objectValue else {
            throw LeapError.format("bundle manifest: load_time_parameters must be an object, got \(loadValue.typeName)")
        }
        warnUnknownKeys(top, known: ["schema_version", "inference_type", "load_time_parameters", "generation_time_parameters"], in: "")
        warnUnknownKeys(load, known: ["model", "multimodal_projector", "audio_decoder", "audio_tokenizer", "chat_template"],
                        in: "load_time_parameters.")
        guard let model = try file(load, "model") else {
            throw LeapError.format("bundle manifest: load_time_parameters.model is missing")
        }
        var m = BundleManifest(model: model)
        m.schemaVersion = version
        m.inferenceType = inference
        m.multimodalProjector = try file(load, "multimodal_projector")
        m.audioDecoder = try file(load, "audio_decoder")
        m.audioTokenizer = try file(load, "audio_tokenizer")
        m.chatTemplate = try chatTemplate(load)
        if let genValue = top["generation_time_parameters"], !genValue.isNull {
            guard let gen = genValue.objectValue else {
                throw LeapError.format("bundle manifest: generation_time_parameters must be an object, got \(genValue.typeName)")
            }
            try readGenerationParameters(gen, into: &m)
        }
        return m
    }

    private static func readGenerationParameters(_ gen: JSONObject, into m: inout BundleManifest) throws {
        let g = "generation_time_parameters"
        if let threads = try optionalInteger(gen, "number_of_decoding_threads", in: g) {
            guard threads >= 0 && threads <= 1024 else {
                throw LeapError.format("bundle manifest: \(g).number_of_decoding_threads must be in 0...1024, got \(threads)")
            }
            m.decodingThreads = threads > 0 ? Int(threads) : nil
        }
        guard let spValue = gen["sampling_parameters"], !spValue.isNull else { return }
        let s = g + ".sampling_parameters"
        guard let sp = spValue.objectValue else {
            throw LeapError.format("bundle manifest: \(s) must be an object, got \(spValue.typeName)")
        }
        func number(_ key: String, _ valid: (Double) -> Bool, _ range: String) throws -> Float? {
            guard let v = sp[key], !v.isNull else { return nil }
            guard let d = v.doubleValue else {
                throw LeapError.format("bundle manifest: \(s).\(key) must be a number, got \(v.typeName)")
            }
            guard d.isFinite, valid(d) else { throw LeapError.format("bundle manifest: \(s).\(key) must be \(range), got \(d)") }
            return Float(d)
        }
        m.sampling.temperature = try number("temperature", { $0 >= 0 && $0 <= 100 }, "in 0...100")
        m.sampling.topP = try number("top_p", { $0 >= 0 && $0 <= 1 }, "in 0...1")
        m.sampling.minP = try number("min_p", { $0 >= 0 && $0 <= 1 }, "in 0...1")
        m.sampling.repetitionPenalty = try number("repetition_penalty", { $0 > 0 && $0 <= 100 }, "in (0, 100]")
        if let k = try optionalInteger(sp, "top_k", in: s) {
            guard k >= 0 && k <= 1 << 20 else { throw LeapError.format("bundle manifest: \(s).top_k must be in 0...1048576, got \(k)") }
            m.sampling.topK = Int(k)
        }
    }

    /// Unknown keys are ignored (as LEAP does), but said: a misspelt file key would otherwise go unnoticed.
    private static func warnUnknownKeys(_ o: JSONObject, known: [String], in prefix: String) {
        guard Log.enabled(.warning) else { return }
        for key in o.keys where !known.contains(key) { Log.warning("bundle manifest: unknown key \(prefix)\(key) ignored") }
    }

    private static func optionalString(_ o: JSONObject, _ key: String) throws -> String? {
        guard let v = o[key], !v.isNull else { return nil }
        guard let s = v.stringValue else { throw LeapError.format("bundle manifest: \(key) must be a string, got \(v.typeName)") }
        return s
    }

    private static func optionalInteger(_ o: JSONObject, _ key: String, in parent: String) throws -> Int64? {
        guard let v = o[key], !v.isNull else { return nil }
        guard let d = v.doubleValue, d.isFinite, d == d.rounded(), abs(d) < 1e15, let i = v.intValue else {
            throw LeapError.format("bundle manifest: \(parent).\(key) must be an integer, got \(v.typeName == "a number" ? "\(v.doubleValue ?? 0)" : v.typeName)")
        }
        return i
    }

    /// A FILE entry of load_time_parameters (nil when absent or null).
    private static func file(_ load: JSONObject, _ key: String) throws -> BundleFileReference? {
        let name = "load_time_parameters.\(key)"
        guard let v = load[key], !v.isNull else { return nil }
        if let s = v.stringValue { return BundleFileReference(try location(s, name)) }
        guard let o = v.objectValue else {
            throw LeapError.format("bundle manifest: \(name) must be a string (a URL or path) or an object with \"url\", got \(v.typeName)")
        }
        guard let urlValue = o["url"], let url = urlValue.stringValue else {
            throw LeapError.format("bundle manifest: \(name).url must be a string (a URL or path)")
        }
        var ref = BundleFileReference(try location(url, name + ".url"))
        if let h = o["sha256"], !h.isNull {
            guard let hex = h.stringValue else { throw LeapError.format("bundle manifest: \(name).sha256 must be a string, got \(h.typeName)") }
            ref.sha256 = try sha256Hex(hex, name + ".sha256")
        }
        if let n = try optionalInteger(o, "size", in: name) {
            guard n >= 0 else { throw LeapError.format("bundle manifest: \(name).size must not be negative, got \(n)") }
            ref.size = n
        }
        return ref
    }

    /// chat_template: Jinja source when it reads as a template (`{{` or `{%`), else a FILE. Searched as
    /// bytes, as Jinja's lexer reads: after a prepended mark (U+0600...) the "{" is one Character with it.
    private static func chatTemplate(_ load: JSONObject) throws -> BundleChatTemplate? {
        if let s = load["chat_template"]?.stringValue {
            let u = Array(s.utf8)
            let opens = u.indices.dropLast().contains { u[$0] == UInt8(ascii: "{") && (u[$0 + 1] == UInt8(ascii: "{") || u[$0 + 1] == UInt8(ascii: "%")) }
            if opens { return .source(s) }
        }
        return try file(load, "chat_template").map { .file($0) }
    }

    private static func location(_ s: String, _ name: String) throws -> String {
        guard !s.isEmpty else { throw LeapError.format("bundle manifest: \(name) is empty") }
        guard !s.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            throw LeapError.format("bundle manifest: \(name) contains a control character")
        }
        return s
    }

    /// Lowercase 64-digit hex, or a precise error.
    package static func sha256Hex(_ s: String, _ name: String) throws -> String {
        let lower = String(s.lowercased())
        guard lower.utf8.count == 64, lower.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else {
            throw LeapError.format("bundle manifest: \(name) must be 64 hexadecimal digits (a SHA-256), got \"\(s)\"")
        }
        return lower
    }
}
