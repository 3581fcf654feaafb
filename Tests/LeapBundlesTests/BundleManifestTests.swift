import LeapBundles
import LeapCore
import Testing

private func parse(_ json: String) throws -> BundleManifest { try BundleManifest.parse(Array(json.utf8)) }

/// The error `json` is refused with.
private func refusal(_ json: String) -> LeapError? {
    do {
        _ = try parse(json)
        return nil
    } catch let e as LeapError {
        return e
    } catch {
        return LeapError(.internal, "\(error)")
    }
}

@Suite struct BundleManifestTests {
    /// The shape of LeapBundles' LFM2.5-Audio manifest (published files are URLs; these are relative).
    @Test func fullManifest() throws {
        let m = try parse("""
        {"schema_version": "1.0.0", "inference_type": "llama.cpp/lfm2-audio-v1",
         "load_time_parameters": {"model": "LFM2.5-Audio-1.5B-Q4_0.gguf",
            "multimodal_projector": "https://example.org/x/mmproj-LFM2.5-Audio-1.5B-Q4_0.gguf",
            "audio_decoder": "vocoder-LFM2.5-Audio-1.5B-Q4_0.gguf", "audio_tokenizer": "tokenizer-LFM2.5-Audio-1.5B-Q4_0.gguf",
            "unknown_future_key": 3},
         "generation_time_parameters": {"sampling_parameters": {"temperature": 0.3, "top_p": 0.9, "min_p": 0.15,
            "repetition_penalty": 1.05, "top_k": 50}, "number_of_decoding_threads": 4}}
        """)
        #expect(m.schemaVersion == "1.0.0" && m.inferenceType == "llama.cpp/lfm2-audio-v1")
        #expect(m.model == BundleFileReference("LFM2.5-Audio-1.5B-Q4_0.gguf"))
        #expect(m.multimodalProjector?.location == "https://example.org/x/mmproj-LFM2.5-Audio-1.5B-Q4_0.gguf")
        #expect(m.audioDecoder?.location == "vocoder-LFM2.5-Audio-1.5B-Q4_0.gguf")
        #expect(m.audioTokenizer?.location == "tokenizer-LFM2.5-Audio-1.5B-Q4_0.gguf")
        #expect(m.chatTemplate == nil)
        #expect(m.sampling.temperature == 0.3 && m.sampling.topP == 0.9 && m.sampling.minP == 0.15)
        #expect(m.sampling.repetitionPenalty == 1.05 && m.sampling.topK == 50)
        #expect(m.decodingThreads == 4)
        #expect(m.files.map(\.key) == ["model", "multimodal_projector", "audio_decoder", "audio_tokenizer"])
    }

    @Test func minimalManifestAndOptionalForms() throws {
        let m = try parse(#"{"load_time_parameters": {"model": "m.gguf", "multimodal_projector": null}, "generation_time_parameters": {"number_of_decoding_threads": 0}}"#)
        #expect(m.model.location == "m.gguf" && m.multimodalProjector == nil && m.decodingThreads == nil)
        #expect(m.sampling == BundleSampling())
        let hex = String(repeating: "aB", count: 32)
        let f = try parse(#"{"load_time_parameters": {"model": {"url": "https://h/m.gguf", "sha256": "\#(hex)", "size": 1234}}}"#)
        #expect(f.model == BundleFileReference("https://h/m.gguf", sha256: String(hex.lowercased()), size: 1234))
    }

    @Test func chatTemplateInlineOrFile() throws {
        let inline = try parse(#"{"load_time_parameters": {"model": "m.gguf", "chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}"}}"#)
        #expect(inline.chatTemplate == .source("{% for m in messages %}{{ m.content }}{% endfor %}"))
        #expect(inline.files.count == 1)
        let file = try parse(#"{"load_time_parameters": {"model": "m.gguf", "chat_template": "template.jinja"}}"#)
        #expect(file.chatTemplate == .file(BundleFileReference("template.jinja")))
        #expect(file.files.map(\.key) == ["model", "chat_template"])
        // A prepended mark (U+0600) before "{{" makes one Character with the "{": still a template.
        let marked = try parse(#"{"load_time_parameters": {"model": "m.gguf", "chat_template": "\u0600{{ messages[0].content }}"}}"#)
        #expect(marked.chatTemplate.map { if case .source = $0 { return true } else { return false } } == true)
    }

    @Test(arguments: [
        ("[1]", LeapError.Kind.format, "expected a JSON object, got an array"),
        ("{", .format, "not valid JSON"),
        ("{}", .format, "load_time_parameters is missing"),
        (#"{"load_time_parameters": 1}"#, .format, "load_time_parameters must be an object, got a number"),
        (#"{"load_time_parameters": {}}"#, .format, "load_time_parameters.model is missing"),
        (#"{"load_time_parameters": {"model": ""}}"#, .format, "load_time_parameters.model is empty"),
        (#"{"load_time_parameters": {"model": 7}}"#, .format, "load_time_parameters.model must be a string (a URL or path) or an object"),
        (#"{"load_time_parameters": {"model": "a\u0001b"}}"#, .format, "load_time_parameters.model contains a control character"),
        (#"{"load_time_parameters": {"model": {"sha256": "00"}}}"#, .format, "load_time_parameters.model.url must be a string"),
        (#"{"load_time_parameters": {"model": {"url": "m", "sha256": "xyz"}}}"#, .format, "load_time_parameters.model.sha256 must be 64 hexadecimal digits"),
        (#"{"load_time_parameters": {"model": {"url": "m", "size": -1}}}"#, .format, "load_time_parameters.model.size must not be negative"),
        (#"{"load_time_parameters": {"model": "m", "audio_decoder": []}}"#, .format, "load_time_parameters.audio_decoder must be a string"),
        (#"{"schema_version": "2.0.0", "load_time_parameters": {"model": "m"}}"#, .unsupported, "schema_version \"2.0.0\" is not supported"),
        (#"{"schema_version": "v1", "load_time_parameters": {"model": "m"}}"#, .format, "is not a version number"),
        (#"{"schema_version": 1, "load_time_parameters": {"model": "m"}}"#, .format, "schema_version must be a string, got a number"),
        (#"{"inference_type": "executorch", "load_time_parameters": {"model": "m"}}"#, .unsupported, "inference_type \"executorch\" is not supported"),
        (#"{"load_time_parameters": {"model": "m"}, "generation_time_parameters": []}"#, .format, "generation_time_parameters must be an object"),
        (#"{"load_time_parameters": {"model": "m"}, "generation_time_parameters": {"number_of_decoding_threads": 2.5}}"#, .format, "number_of_decoding_threads must be an integer, got 2.5"),
        (#"{"load_time_parameters": {"model": "m"}, "generation_time_parameters": {"number_of_decoding_threads": 5000}}"#, .format, "number_of_decoding_threads must be in 0...1024, got 5000"),
        (#"{"load_time_parameters": {"model": "m"}, "generation_time_parameters": {"sampling_parameters": "hot"}}"#, .format, "sampling_parameters must be an object"),
        (#"{"load_time_parameters": {"model": "m"}, "generation_time_parameters": {"sampling_parameters": {"temperature": "0.3"}}}"#, .format, "sampling_parameters.temperature must be a number, got a string"),
        (#"{"load_time_parameters": {"model": "m"}, "generation_time_parameters": {"sampling_parameters": {"temperature": -1}}}"#, .format, "temperature must be in 0...100, got -1.0"),
        (#"{"load_time_parameters": {"model": "m"}, "generation_time_parameters": {"sampling_parameters": {"top_p": 1.5}}}"#, .format, "top_p must be in 0...1, got 1.5"),
        (#"{"load_time_parameters": {"model": "m"}, "generation_time_parameters": {"sampling_parameters": {"repetition_penalty": 0}}}"#, .format, "repetition_penalty must be in (0, 100], got 0.0"),
        (#"{"load_time_parameters": {"model": "m"}, "generation_time_parameters": {"sampling_parameters": {"top_k": -3}}}"#, .format, "top_k must be in 0...1048576, got -3"),
    ])
    func refusedWithAPreciseMessage(json: String, kind: LeapError.Kind, fragment: String) {
        let e = refusal(json)
        #expect(e?.kind == kind, "\(json): \(e?.message ?? "accepted")")
        #expect(e?.message.contains(fragment) == true, "\(json): \(e?.message ?? "accepted")")
    }

    @Test func tooLarge() {
        let e = refusal(String(repeating: " ", count: BundleManifest.maxBytes + 1))
        #expect(e?.message.contains("too large for a manifest") == true)
    }
}

@Suite struct BundleLocationTests {
    @Test func sources() throws {
        #expect(try BundleLocation.source("https://h.org/a/b.json") == .url("https://h.org/a/b.json"))
        #expect(try BundleLocation.source("HTTP://h/x.json") == .url("HTTP://h/x.json"))
        #expect(try BundleLocation.source("dir/b.json") == .path("dir/b.json"))
        #expect(try BundleLocation.source("file:///tmp/a%20b/m.json") == .path("/tmp/a b/m.json"))
        #expect(try BundleLocation.source("file://localhost/tmp/m.json") == .path("/tmp/m.json"))
        for bad in ["", "ftp://h/x.json", "https://", "https://h/a b.json", "file://relative/m.json", "file:///a%zz"] {
            #expect(throws: LeapError.self, "\(bad)") { try BundleLocation.source(bad) }
        }
    }

    @Test func relativeEntriesOfAURLManifest() throws {
        let m = BundleLocation.url("https://hf.co/LiquidAI/LeapBundles/resolve/main/LFM2-1.2B-GGUF/Q4_0.json?download=1#x")
        #expect(try m.resolve("LFM2-1.2B-Q4_0.gguf") == .url("https://hf.co/LiquidAI/LeapBundles/resolve/main/LFM2-1.2B-GGUF/LFM2-1.2B-Q4_0.gguf"))
        #expect(try m.resolve("./sub/../m.gguf") == .url("https://hf.co/LiquidAI/LeapBundles/resolve/main/LFM2-1.2B-GGUF/m.gguf"))
        #expect(try m.resolve("../../../../../../../../up.gguf") == .url("https://hf.co/up.gguf"))
        #expect(try m.resolve("/root.gguf") == .url("https://hf.co/root.gguf"))
        #expect(try m.resolve("http://other:8080/m.gguf") == .url("http://other:8080/m.gguf"))
        #expect(try BundleLocation.url("http://h:1").resolve("m.gguf") == .url("http://h:1/m.gguf"))
        #expect(throws: LeapError.self) { try m.resolve("file:///etc/passwd") }
        #expect(throws: LeapError.self) { try m.resolve("s3://bucket/m.gguf") }
    }

    @Test func entriesOfAPathManifest() throws {
        let m = BundleLocation.path("/models/LFM2-GGUF/Q8_0.json")
        #expect(try m.resolve("m.gguf") == .path("/models/LFM2-GGUF/m.gguf"))
        #expect(try m.resolve("/abs/m.gguf") == .path("/abs/m.gguf"))
        #expect(try m.resolve("https://h/m.gguf") == .url("https://h/m.gguf"))
        #expect(try m.resolve("file:///x/m.gguf") == .path("/x/m.gguf"))
        #expect(try BundleLocation.path("Q8_0.json").resolve("m.gguf") == .path("m.gguf"))
    }

    /// A "/" followed by a combining mark is one Character with it, but still a "/" of the path: the
    /// manifest's folder, an absolute entry and dot segments are found on bytes. (Compared as bytes:
    /// BundleLocation's == is String's, canonical equivalence.)
    @Test func pathsAreSplitOnBytes() throws {
        func text(_ l: BundleLocation) -> [UInt8] {
            switch l {
            case .url(let u): return Array(("url " + u).utf8)
            case .path(let p): return Array(("path " + p).utf8)
            }
        }
        let u = BundleLocation.url("https://h/a/\u{301}m.json")
        #expect(text(try u.resolve("x.gguf")) == text(.url("https://h/a/x.gguf")))
        #expect(text(try BundleLocation.url("https://h/\u{301}a/m.json").resolve("x.gguf")) == text(.url("https://h/\u{301}a/x.gguf")))
        #expect(text(try u.resolve("/\u{301}x.gguf")) == text(.url("https://h/\u{301}x.gguf")))
        #expect(text(try u.resolve("\u{301}/../x.gguf")) == text(.url("https://h/a/x.gguf")))
        #expect(BundleLocation.removingDotSegments("/a/\u{301}/../b") == "/a/b")
        let p = BundleLocation.path("/m/d/\u{301}b.json")
        #expect(text(try p.resolve("x.gguf")) == text(.path("/m/d/x.gguf")))
        #expect(text(try p.resolve("/\u{301}x.gguf")) == text(.path("/\u{301}x.gguf")))
        // "file://" then a mark and a path: the mark is a host (not this machine), whatever Characters say.
        #expect(throws: LeapError.self) { try BundleLocation.source("file://\u{301}/etc/m.json") }
    }

    @Test func cacheNames() {
        func folder(_ s: String) -> String { BundleCache.folderName(forManifest: (try? BundleLocation.source(s)) ?? .path(s)) }
        #expect(folder("https://hf.co/LiquidAI/LeapBundles/resolve/main/LFM2-1.2B-GGUF/Q4_K_M.json") == "LFM2-1.2B-Q4_K_M@https-hf.co")
        #expect(folder("https://hf.co/LiquidAI/LeapBundles/resolve/main/LFM2-350M-ENJP-MT-GGUF/leap/Q5_K_M.json?x=1") == "LFM2-350M-ENJP-MT-Q5_K_M@https-hf.co")
        #expect(folder("/m/My Model/q.json") == "My_Model-q")
        #expect(folder("q.json") == "q")
        #expect(folder("https://h/../.json") == "bundle@https-h")
        #expect(folder("file:///m/LFM2-GGUF/Q8_0.json") == "LFM2-Q8_0")
        // The origin: another host, scheme or port is another folder; case and a user name are not.
        let path = "/LiquidAI/LFM2-GGUF/Q8_0.json"
        #expect(folder("https://evil.example" + path) == "LFM2-Q8_0@https-evil.example")
        #expect(folder("http://hf.co" + path) == "LFM2-Q8_0@http-hf.co")
        #expect(folder("https://HF.co:8443" + path) == "LFM2-Q8_0@https-hf.co:8443")
        #expect(folder("https://user:secret@hf.co" + path) == "LFM2-Q8_0@https-hf.co")
        #expect(folder("http://[::1]:8080" + path) == "LFM2-Q8_0@http-[::1]:8080")
        // Bytes a host name cannot hold are percent-encoded, so that no two hosts share a name.
        #expect(folder("https://a_b" + path) == "LFM2-Q8_0@https-a%5Fb")
        #expect(folder("https://a%5Fb" + path) == "LFM2-Q8_0@https-a%255fb")
        // A combining mark after the path's "/" (one Character with it): the path still starts there, so
        // an "@" in the path never makes it the host.
        #expect(BundleLocation.split("https://h/\u{35E}x@y.json") == (origin: "https://h", path: "/\u{35E}x@y.json"))
        #expect(folder("https://h/\u{35E}x@y") != folder("https://h2/\u{35E}x@y"))
        #expect(folder("https://h/\u{35E}x@y").hasSuffix("@https-h"))
        // A host too long for a file name keeps its start and a hash of the whole.
        let long = folder("https://" + String(repeating: "a", count: 300) + ".example" + path)
        #expect(long.utf8.count <= 255 && long.hasPrefix("LFM2-Q8_0@https-" + String(repeating: "a", count: 60) + "~"))
        #expect(long != folder("https://" + String(repeating: "a", count: 301) + ".example" + path))
        #expect(BundleCache.fileName(forURL: "https://h/a/LFM2-Q4_0.gguf?download=true") == "LFM2-Q4_0.gguf")
        #expect(BundleCache.fileName(forURL: "https://h/a/..") == "download")
        #expect(BundleCache.fileName(forURL: "https://h/.hidden") == "_hidden")
        #expect(BundleCache.fileName(forURL: "https://h/a%2F..%2Fb") == "a_2F.._2Fb")
    }
}
